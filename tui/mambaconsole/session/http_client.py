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
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
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


async def client_off_loop(make: Callable[[], C]) -> C:
    """The client ``make`` returns, made (:func:`warm_client`) in a worker thread, not on the
    running event loop."""
    return await asyncio.to_thread(warm_client, make)
