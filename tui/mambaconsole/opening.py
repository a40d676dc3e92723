"""Opening the console on a host (``mambaconsole HOST``): the node's first command runs while
the console's screens are imported.

The first view waits for two things that do not depend on each other: this machine imports
the UI (Textual, the panes: ~0.3 s of CPU on a loaded 2-core machine), and the node answers
the first look (``agent/first_look.py``: its login shell's rc files, its python, the runs
listing, the log; 0.3-0.5 s, on the node's CPU and the link). One after the other they add
up; :func:`open_host` runs them side by side: the node's command goes out first, on this
thread's event loop, and the UI is imported meanwhile in a worker thread (the loop waits on
its sockets, so the import has the interpreter to itself but for the moments an answer comes
in); the same thread then imports what the console needs right after its first view
(:data:`FIRST_USE`). The session's answers that come meanwhile are held, in order, for the app
(:attr:`Opened.held`: handed to it before anything else, so they are handled in order with
everything after them, as every answer is).

No Textual here: this module runs before the UI is imported.
"""

from __future__ import annotations

import asyncio
import importlib
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mambaconsole.errors import ConsoleError

#: the module imported while the node answers (the console's app and every pane)
UI_MODULE = "mambaconsole.ui.app"
#: what the console imports at first use in the first second after its first view (the node's
#: facts, the server's first HTTP polls and the resolution start then): the resolver client
#: (``mambaconsole.resolve``, 18-22 ms of CPU on this project's 2-core box), the ``/metrics``
#: parser with prometheus_client (21-24 ms), the HTTP client's httpx, its transport httpcore
#: (which httpx 0.28 imports only when a client is made: 14-16 ms) and anyio's asyncio backend
#: (14, 14-16 and 20 ms, in a worker thread whose slices of the interpreter the event loop waits
#: for), the JSON bounds and ``time.strptime``'s module. Imported before the first view
#: (:func:`preload`), not on the event loop while the first live lines and keys come in.
FIRST_USE = ("mambaconsole.resolve", "mambaconsole.sglang.metrics", "httpx", "httpcore", "anyio._backends._asyncio",
             "mambaconsole.bounded", "_strptime")


@dataclass
class Opened:
    """A host's console, opened: its ``session`` (connected, started) on ``loop`` (not running
    between calls), ``held`` the session's answers that came before the app existed (callables,
    oldest first), ``ui`` the imported :data:`UI_MODULE`."""

    session: Any
    loop: asyncio.AbstractEventLoop
    ui: Any
    held: list[Callable[[], None]] = field(default_factory=list)


def host_overrides(args: Any) -> dict[str, Any]:
    """The command line's per-host settings (``--python`` ...; None: not given)."""
    return {k: getattr(args, k, None) for k in ("python", "session", "port", "workdir", "theme")}


def needs_terminal() -> None:
    """Raise ConsoleError (one line) unless stdin and stdout are a terminal: the console is
    interactive, and nothing is opened on the node for a console that cannot be shown."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise ConsoleError("the console needs a terminal (stdin/stdout are not a TTY); "
                           "for scripts use: doctor, launch, runs, stop, inspect, resolve, report")


def open_host(host: str, overrides: dict[str, Any]) -> Opened:
    """Connect to ``host`` (:func:`~mambaconsole.session.session.for_host`: an unreachable
    host raises here, one line), check that there is a terminal (:func:`needs_terminal`),
    start the session, and import the UI while the node answers.
    The caller runs the app on :attr:`Opened.loop` (and closes it); on an error here the
    session is closed and the loop too."""
    from mambaconsole.session.session import for_host

    loop = asyncio.new_event_loop()
    session = None
    try:
        session = for_host(host, overrides, loop=loop)
        needs_terminal()  # after the host's check: a mistyped host is said first, terminal or not
        held: list[Callable[[], None]] = []
        session.dispatch = held.append  # the app takes these over (ConsoleApp(held=...))

        def imports():
            ui = importlib.import_module(UI_MODULE)
            preload()
            return ui

        async def meanwhile():
            session.start()
            return await asyncio.to_thread(imports)

        ui = loop.run_until_complete(meanwhile())
        return Opened(session, loop, ui, held)
    except BaseException:
        try:
            if session is not None:
                loop.run_until_complete(asyncio.wait_for(session.close(), 15))
                loop.run_until_complete(asyncio.wait_for(session.feed.close(), 15))
        finally:
            close_loop(loop)
        raise


def preload() -> None:
    """Import :data:`FIRST_USE` (where not imported yet): what the console needs right after its
    first view, imported before it (in :func:`open_host`'s worker thread while the node answers;
    the app does it while its connection opens). Only a head start: a module that cannot be
    imported here (an installed library's inner module moved) is left to its first use."""
    for name in FIRST_USE:
        try:
            importlib.import_module(name)
        except ImportError:
            continue


def close_loop(loop: asyncio.AbstractEventLoop) -> None:
    """Close ``loop`` as ``asyncio.run`` closes its own: what is left running is cancelled and
    waited for, async generators are finalised."""
    try:
        left = asyncio.all_tasks(loop)
        for task in left:
            task.cancel()
        if left:
            loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.run_until_complete(loop.shutdown_default_executor())  # the import's worker thread
    finally:
        loop.close()
