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


#: once the console runs (start-up frozen, the log's history read), a full collection is
#: considered after this many collections of the middle generation (``gc.set_threshold``'s
#: third value; Python's default: 10). What a full collection scans is what start-up did not
#: freeze: mostly Textual's caches of rendered rows (about 30k objects while a log streams at
#: 120x40), 9-12 ms of CPU on this project's 2-core box each time; at Python's default one ran
#: about every second while a line came every 10 ms, each a stall of the event loop that the
#: lines and keys on their way wait behind (they were log_latency's slowest lines). At 100:
#: about one in 10 s. The young generations' thresholds stay Python's: their collections take
#: under 1 ms (a larger first threshold made each of them 6-9 ms). Only objects in reference
#: cycles wait longer, and the console's rendered rows are no longer among them
#: (:mod:`mambaconsole.ui.strip_cycles`): under ``bench/keys_under_flood.py`` no garbage piles
#: up between full collections (its p99 fell from 70-92 to 35-38 ms with this setting).
FULL_AFTER = 100


def steady_collector() -> tuple[int, int, int]:
    """Set the collector's thresholds for the running console (:data:`FULL_AFTER`; a third
    threshold set higher stays); returns the ones it replaced, for ``gc.set_threshold``."""
    old = gc.get_threshold()
    gc.set_threshold(old[0], old[1], max(old[2], FULL_AFTER))
    return old


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
