"""Escape sequences for the terminal itself, beside Textual's frames (desktop notices).

Textual rings the bell through public API (``App.bell``) but has none for any other
sequence: the driver that writes its frames is the app's private ``_driver``. Its class is
public, though (``App.get_driver_class``, ``Driver.write``): the cockpit runs on a subclass
of the platform's driver that remembers its one instance, so ``writer(app)`` is the driver
of a running cockpit. Sequences go through the driver's own writer, in order with frames,
never half inside one.
"""

from __future__ import annotations

from typing import ClassVar

from textual.app import App
from textual.driver import Driver


def recording(driver_class: type[Driver]) -> type[Driver]:
    """A subclass of ``driver_class`` whose instance, while it drives the terminal, can be
    found from the class; one class per app (the app's constructor asks
    ``App.get_driver_class`` once)."""

    class Recorded(driver_class):  # type: ignore[valid-type, misc]  # a base chosen at run time
        running: ClassVar[Driver | None] = None

        def start_application_mode(self) -> None:  # also on resuming after a suspend
            super().start_application_mode()
            type(self).running = self

        def stop_application_mode(self) -> None:
            type(self).running = None  # nothing may be written while it is stopped
            super().stop_application_mode()

    Recorded.__name__ = Recorded.__qualname__ = f"Recorded{driver_class.__name__}"
    return Recorded


def writer(app: App) -> Driver | None:
    """The driver writing ``app``'s frames to a terminal; None when there is none (headless,
    inline, not started or stopped)."""
    if app.is_headless or not app.is_running:
        return None
    return getattr(app.driver_class, "running", None)
