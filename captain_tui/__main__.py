import sys

from captain_tui.cli.main import main

sys.exit(main())
