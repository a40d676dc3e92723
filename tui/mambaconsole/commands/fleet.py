"""``mambaconsole fleet TARGET... [--via HOST] [--json | --once]``: every worker behind SGLang's
router (or each host's server), as the router sees it and as the engine answers.

TARGET: a router URL (``http://127.0.0.1:30000``) or a host of the settings (``[hosts.NAME]``
with its ``port``; no router). ``--via HOST``: the router URL and the worker URLs it lists are
as seen from HOST, reached through SSH port forwards (``local`` for this machine).

Table (``--once``, or when stdout is not a terminal): one row per worker: role (regular /
prefill / decode), health as the router sees it and as the engine answers (``!`` marks a
disagreement), SGLang version, running and queued requests, KV and Mamba usage, accept length,
TTFT and ITL p50/p99 (since the server started: one look has no minute to compare with; the
screen shows the last minute), GPU memory (weights + KV, GiB), data age; then the
disagreements and the ServerArgs differences, the ones that matter first. On a terminal
without ``--json``/``--once``: the fleet screen (Enter opens the console on a worker's host).

``--json``: ``{"workers": [{"url", "role", "router_health", "engine_health", "version",
"running", "queued", ...}], "disagreements": [{"worker", "what", "router", "engine"}],
"args_differences": [{"field", "between", "matters", "why", "values": {worker: value}}],
"router_errors": {url: message}}``. Exit status 0, or 1 when a router could not be read.
"""

from __future__ import annotations

import argparse
import json
import sys

from mambaconsole.commands._common import run_async

HELP = "the fleet: every worker behind SGLang's router, router's and engine's view side by side"
#: the module with the interactive screen (opened by the CLI, not imported here)
SCREEN = "mambaconsole.ui.fleet"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("targets", nargs="+", metavar="TARGET",
                        help="a router URL (http://HOST:PORT) or a host of the settings")
    parser.add_argument("--via", metavar="HOST", help="the URLs are as seen from this host (SSH forwards)")
    parser.add_argument("--json", action="store_true", help="print one JSON object and exit")
    parser.add_argument("--once", action="store_true", help="print the table once and exit")


def wants_screen(args: argparse.Namespace) -> bool:
    """The screen on a terminal unless --json/--once (the table where the screen is not built)."""
    import importlib.util

    return not (args.json or args.once) and sys.stdout.isatty() and importlib.util.find_spec(SCREEN) is not None


def fleet_for(args: argparse.Namespace):
    """The :class:`~mambaconsole.session.fleet.Fleet` the arguments describe."""
    from mambaconsole.session.fleet import Fleet, parse_target
    from mambaconsole.session.settings import host_ports

    return Fleet([parse_target(t) for t in args.targets], hosts=host_ports(), via=args.via)


def table(snap) -> str:
    """The snapshot as plain text (see the module docstring)."""
    from mambaconsole.session.fleet import COLUMNS, difference_line, disagreement_line, row_cells

    marked = {d.worker for d in snap.disagreements}
    rows = [("", *COLUMNS)] + [("!" if w.url in marked else "", *row_cells(w)) for w in snap.workers]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = ["  ".join(c.ljust(widths[i]) for i, c in enumerate(r)).rstrip() for r in rows]
    if not snap.workers:
        out.append("(no workers)")
    for url, err in snap.router_errors.items():
        out.append(f"router {url}: {err}")
    if snap.disagreements:
        out += ["", "router and engine disagree:"] + ["  " + disagreement_line(d) for d in snap.disagreements]
    if snap.differences:
        out += ["", "ServerArgs differences (the ones that matter first):"] + ["  " + difference_line(d) for d in snap.differences]
    return "\n".join(out)


async def _main(args) -> int:
    async with fleet_for(args) as fleet:
        snap = await fleet.poll()
    if args.json:
        print(json.dumps(snap.as_json(), indent=1, default=str))
    else:
        print(table(snap))
    return 1 if snap.router_errors else 0


def run(args: argparse.Namespace) -> int:
    return run_async(_main(args))
