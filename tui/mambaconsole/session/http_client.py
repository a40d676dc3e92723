"""HTTP clients made off the event loop.

Making an ``httpx.AsyncClient`` (httpx 0.28) costs the interpreter tens of ms of CPU, on the
thread that makes it: importing its transport httpcore where nothing has yet (httpx imports
it only when a client is made: 14-16 ms on this project's 2-core box), building the transport's
SSL context (with ``verify=True``, certifi's CA bundle read into it by
``load_verify_locations``: 20-28 ms) and, at the client's first request, importing anyio's
asyncio backend (about 25 ms). On the console's event loop that holds the drawn frames and the
keys; :func:`client_off_loop` does all of it in a worker thread, whose slices of the
interpreter (5 ms each) the loop still waits for, but between which it draws and reads keys.

Used by the feed's polls (:meth:`mambaconsole.session.feed.Feed._client`) and the fleet
(:meth:`mambaconsole.session.fleet.Fleet.__aenter__`), each with a client of its own making.
A client whose caller gave up while the thread made it (the fleet screen quit) is closed once
made: nothing else holds it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import TypeVar

__all__ = ["client_off_loop", "warm_client"]

C = TypeVar("C")


def warm_client(make: Callable[[], C]) -> C:
    """``make()`` (a function that returns a new ``httpx.AsyncClient``; it imports httpx
    itself), then anyio run once on this thread's own event loop, so that the client's first
    request finds anyio's asyncio backend imported. Blocking: what :func:`client_off_loop`
    runs in its worker thread."""
    import anyio

    client = make()
    anyio.run(anyio.sleep, 0)
    return client


class _Handoff:
    """The made client passes to the caller, or, where the caller gave up first, to ``close``:
    one lock orders the thread's handing over and the caller's giving up."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._abandoned = False
        self._handed: object | None = None

    def make(self, make: Callable[[], C], close: Callable[[C], Awaitable[object]]) -> C | None:
        """In the worker thread: the client, or None (closed here) where the caller gave up."""
        client = warm_client(make)
        with self._lock:
            if not self._abandoned:
                self._handed = client
                return client
        _close_here(close, client)
        return None

    def abandon(self) -> object | None:
        """The caller gives up: the client the thread handed over already (the caller's to
        close), else None (the thread closes it once made)."""
        with self._lock:
            self._abandoned = True
            return self._handed


def _close_here(close: Callable[[C], Awaitable[object]], client: C) -> None:
    """``close(client)`` on this thread's own event loop: a client no request has used yet is
    bound to no loop."""
    import anyio

    anyio.run(close, client)


async def client_off_loop(make: Callable[[], C], close: Callable[[C], Awaitable[object]]) -> C:
    """The client ``make`` returns, made (:func:`warm_client`) in a worker thread, not on the
    running event loop. Cancelled while the thread makes it, the client is closed (``close``,
    on a worker thread's own event loop) once made."""
    handoff = _Handoff()
    try:
        return await asyncio.to_thread(handoff.make, make, close)  # type: ignore[return-value]
    except asyncio.CancelledError:
        made = handoff.abandon()
        if made is not None:  # made and handed over, the caller cancelled before it resumed
            asyncio.get_running_loop().run_in_executor(None, _close_here, close, made)
        raise
