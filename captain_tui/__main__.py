import sys

from captain_tui.cli import main

sys.exit(main())
