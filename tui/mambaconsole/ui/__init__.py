"""The console's Textual screens and widgets (the only package that imports Textual).

Frame rate: Textual writes a screen update at most ``TEXTUAL_FPS`` times a second (default
60), on a timer that runs in phase with its first tick (textual 8.2.8 ``screen.py``
``UPDATE_PERIOD`` and ``Screen._on_timer_update``, ``timer.py`` ``Timer._run``): a widget
changed just after a frame waits 17-33 ms for the next one, more than the whole path of a log
line from the node's file to the console (under a millisecond over loopback SSH). The console
paces its own redraws (``app.py`` ``LOG_DRAW_SHARE``, ``redraw.py`` ``FramePacer``), so
Textual's timer is set to :data:`FRAMES_PER_SECOND`: a frame follows a change within a
millisecond or two. ``textual.constants`` reads the variable once, when it is first imported,
so this is set before any ``ui`` module imports Textual; a ``TEXTUAL_FPS`` the user set wins.

Start-up without the garbage collector: what the console builds before its first view
(Textual's classes and stylesheet, the panes, SGLang knowledge, the SSH connection, the fold of
the log's history) lives as long as the console, so the collector's passes over it while it
grows find nothing to free (tens of ms of a start-up of under a second).
:func:`hold_collector` (the command line, before it imports the app) turns the collector off;
:func:`release_collector` (the app, once it froze what the first read of the log built:
``gc.freeze``; at the latest ``app.COLLECTOR_HELD_S`` after its mount) turns it back on. Only
objects in reference cycles wait for the collector; the rest are freed as before.
"""

import gc
import os

#: screen updates per second Textual may write at most (its update timer's period is the
#: inverse: 1 ms); the console's own pacing, not this, bounds how often the log is drawn
FRAMES_PER_SECOND = 1000

os.environ.setdefault("TEXTUAL_FPS", str(FRAMES_PER_SECOND))

_held = False  # the collector is off because hold_collector turned it off


def hold_collector() -> None:
    """Turn the garbage collector off for the console's start-up (unless it is off already:
    then it stays as its owner left it). Undone by :func:`release_collector`."""
    global _held
    if gc.isenabled():
        gc.disable()
        _held = True


def release_collector() -> None:
    """Turn the collector back on if :func:`hold_collector` turned it off (the app, once the
    log's history is read; the command line's exit, should the app never get there)."""
    global _held
    if _held:
        _held = False
        gc.enable()
