"""``mambaconsole resolve``: the ServerArgs SGLang will really use for a launch, with the source of
every value, resolved on the node by its own SGLang (see :mod:`mambaconsole.resolve`)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from mambaconsole.commands._common import parse_env, python_hint
from mambaconsole.errors import UsageError

HELP = ("resolve an SGLang launch command on the node with its own SGLang: every ServerArgs value, "
        "where it came from, which SGLang code changed it, or the exact error")

_SOURCE_STYLE = {"overridden": "bold red", "derived": "yellow", "env": "magenta", "config": "cyan",
                 "cli": "green", "default": "dim"}
_ORDER = {"overridden": 0, "derived": 1, "env": 2, "config": 3, "cli": 4, "default": 5}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="local", help="ssh alias, user@host[:port], or 'local' (default)")
    parser.add_argument("--python", default="python3",
                        help="the SGLang server's python on the node (default: python3)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON (stable shape)")
    parser.add_argument("--params", action="store_true",
                        help="print the node's SGLang option metadata instead (for editors)")
    parser.add_argument("--all", action="store_true", help="table: also list the fields left at their defaults")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="environment variable for SGLang on the node (repeatable), like a launch's env prefix")
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds (default 180)")
    from mambaconsole.commands.plan import add_planned_gpu_arguments

    add_planned_gpu_arguments(parser, "resolve as SGLang does on a GPU of N GiB that is not there (with "
                                      "--gpu-name or --gpu-capability), e.g. on a laptop")
    parser.add_argument("sglang_args", nargs=argparse.REMAINDER,
                        help="-- then the SGLang server flags (e.g. -- --model-path M --tp-size 2)")


def run(args: argparse.Namespace) -> int:
    sglang_args = list(args.sglang_args)
    if sglang_args and sglang_args[0] == "--":
        sglang_args = sglang_args[1:]
    env = parse_env(args.env) or None
    if not args.params and not sglang_args:
        raise UsageError("give the SGLang flags after --, e.g. mambaconsole resolve -- --model-path M")
    from mambaconsole.commands.plan import planned_device_of
    from mambaconsole.resolve import ResolveError

    device = planned_device_of(args)
    try:
        result = asyncio.run(_fetch(args.host, args.python, sglang_args, env, args.params, args.timeout, device))
    except ResolveError as exc:
        raise python_hint(exc, args.python, args.host) from None
    if args.json or args.params:
        if args.params and not args.json:
            _print_params(result)
        else:
            print(json.dumps(result, indent=None if args.params else 1))
        return 0
    _print_table(result, show_all=args.all)
    return 0 if result["ok"] else 1


async def _fetch(host, python, argv, env, want_params, timeout, device=None):
    from mambaconsole.node import connect
    from mambaconsole.resolve import params, resolve

    node = await connect(host)
    try:
        if want_params:
            return await params(node, python=python, env=env, timeout=timeout)
        return await resolve(node, argv, python=python, env=env, timeout=timeout, planned_device=device)
    finally:
        await node.close()


def _short(value, width=60) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def reason_for(result: dict, write: dict) -> dict | None:
    """The log message SGLang emitted just before ``write`` in the same code (same file, the
    nearest line at most 40 above it), if any: the "why" behind most changes (e.g. 0.5.11
    "... Automatically setting page_size=1.")."""
    best = None
    for m in result["messages"]:
        if m["file"] and m["file"] == write["file"] and m["line"] is not None:
            d = write["line"] - m["line"]
            if 0 <= d <= 40 and (best is None or d < best[0]):
                best = (d, m)
    return best[1] if best else None


#: terminal width (cells) under which ``resolve`` lists one field per line instead of a table
LIST_BELOW = 110


def _short_path(path: str | None) -> str:
    """SGLang's source path without its package prefix (``sglang/srt/``): the cells stay
    narrow and the rest still names the file in the installed package."""
    p = path or "?"
    for prefix in ("sglang/srt/", "sglang/"):
        if p.startswith(prefix):
            return p[len(prefix):]
    return p


def _print_table(result: dict, show_all: bool = False) -> None:
    from rich import box
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console()
    head = f"SGLang {result['sglang_version']} ({result['python']}), resolved in {result['elapsed_s']:.2f} s"
    if result["usage_error"]:
        ue = result["usage_error"]
        console.print(Text(f"usage error: {ue['message']}", style="bold red"))
        for flag, hint in ue["suggestions"].items():
            console.print(f"  {flag}: {hint}")
        console.print(Text(head, style="dim"))
        return
    err = result["error"]
    if err:
        console.print(Text(f"{err['type']}: {err['message']}", style="bold red"))
        where = f"  raised at {err['file']}:{err['line']} in {err['function']}"
        if err["sglang_file"] and (err["sglang_file"], err["sglang_line"]) != (err["file"], err["line"]):
            where += f"; last SGLang frame {err['sglang_file']}:{err['sglang_line']}"
        if err["step"]:
            where += f"; step {err['step']}"
        console.print(where)
        console.print(Text("fields as resolved up to the failure:", style="dim"))
    fields = result["fields"]
    names = sorted(fields, key=lambda n: (_ORDER[fields[n]["source"]], n))
    # field and source whole on one line; value and "changed by" fold within what is left, so
    # a 120-column terminal is enough (no box edges, one cell of padding)
    table = Table(box=box.SIMPLE_HEAD, header_style="bold", pad_edge=False)
    table.add_column("field", no_wrap=True, overflow="fold")
    table.add_column("value", overflow="fold", max_width=22)
    table.add_column("source", no_wrap=True)
    table.add_column("changed by", overflow="fold", ratio=1, min_width=34)
    hidden = private = 0
    rows = []
    for name in names:
        f = fields[name]
        if f["source"] == "default" and not show_all:
            hidden += 1
            continue
        if name.startswith("_") and not show_all:
            # SGLang's own bookkeeping (``_speculative_draft_quantization_explicitly_set``): no flag sets it
            private += 1
            continue
        style = _SOURCE_STYLE[f["source"]]
        given = f"given {_short(f['given'], 30)}" if f["source"] in ("cli", "config", "overridden") or f["given"] is not None \
            else f"default {_short(f['default'], 30)}"
        value = Text(_short(f["value"]))
        value.append("\n" + given, style="dim")
        changers = []
        for w in f["writes"]:
            if w["old"] == w["new"]:
                continue
            who = w["function"]
            if w["declared_as"] and w["declared_as"].lstrip("_") != w["function"].lstrip("_"):
                who += f" (declared as {w['declared_as']})"
            changers.append(f"{who}\n  {_short_path(w['file'])}:{w['line']}")
            why = reason_for(result, w)
            if why and f["source"] == "overridden":
                changers.append(f"  ↳ {why['level']}: {why['message']}")
        rows.append((name, f, value, style, changers))
    if console.width >= LIST_BELOW:
        for name, f, value, style, changers in rows:
            table.add_row(Text(name, style="bold red" if f["source"] == "overridden" else ""),
                          value, Text(f["source"], style=style), "\n".join(changers))
        console.print(table)
    else:
        # too narrow for four columns: one field per line, what changed it indented under it
        for name, f, value, style, changers in rows:
            line = Text(name, style="bold red" if f["source"] == "overridden" else "bold")
            line.append(" = ")
            line.append(f["value"] if isinstance(f["value"], str) else json.dumps(f["value"]))  # whole: the line wraps
            line.append("  ")
            line.append(f["source"], style=style)
            line.append("  " + value.plain.split("\n", 1)[1], style="dim")
            console.print(line)
            for c in changers:
                console.print(Text("    " + c.replace("\n  ", "  "), style="dim"))
    if hidden or private:
        what = [f"{hidden} at their defaults"] * bool(hidden) + [f"{private} private to SGLang (_name)"] * bool(private)
        console.print(Text(f"not listed: {', '.join(what)} (--all lists them)", style="dim"))
    for m in result["messages"]:
        if m["level"] in ("WARNING", "ERROR", "CRITICAL"):
            loc = f" ({m['file']}:{m['line']})" if m["file"] else ""
            console.print(Text(f"{m['level']}: {m['message']}{loc}", style="yellow"))
    console.print(Text(head, style="dim"))


def _print_params(answer: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(header_style="bold")
    for col in ("option", "dest", "default", "choices", "type"):
        table.add_column(col, overflow="fold")
    for p in answer["params"]:
        table.add_row(", ".join(p["option_strings"]), p["dest"], _short(p["default"], 30),
                      _short(p["choices"], 40) if p["choices"] is not None else "", p["type"] or "")
    Console().print(table)
    print(f"SGLang {answer['sglang_version']}: {len(answer['params'])} options", file=sys.stderr)


