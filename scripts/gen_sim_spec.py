#!/usr/bin/env python3
"""Generate the simulated node's bundled SGLang flag spec from SGLang's own parser.

Usage::

    python scripts/gen_sim_spec.py --python /path/to/venv-with-sglang/bin/python \
        [--out tui/mambaconsole/sim/specs/sglang-<version>.json]

The given python must import the real ``sglang`` (a CPU venv as in the resolver notes:
``pip install --no-deps sglang==X``, CPU torch, triton, a torchvision import stub on
PYTHONPATH). The script runs itself under that python with ``--emit`` and writes one JSON
file holding, for that SGLang version:

* ``actions``: every argparse action of ``argparse.ArgumentParser(prog="sglang serve")`` +
  ``ServerArgs.add_cli_args(p)`` in parser order (option strings, dest, nargs, const, default,
  type name, choices, required, metavar, help, action class name);
* ``fields``: the ServerArgs fields in declaration order with their defaults (dataclass
  fields up to 0.5.18, msgspec struct fields from 0.5.20);
* ``prog``: the parser's program name used in argparse errors (``sglang serve``).

Defaults are JSON values in the versions covered (0.5.11, 0.5.23); anything else is stored
as its ``repr`` under ``{"repr": ...}``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPECS = ROOT / "tui" / "mambaconsole" / "sim" / "specs"


def _jsonable(value):
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        if isinstance(value, (set, frozenset, tuple)):
            return [_jsonable(v) for v in sorted(value, key=repr)]
        return {"repr": repr(value)}


def _type_name(t) -> str | None:
    if t is None:
        return None
    name = getattr(t, "__name__", None) or type(t).__name__
    return name


def emit() -> dict:
    """Runs inside the SGLang venv: read the real parser and fields."""
    import dataclasses
    import logging

    logging.disable(logging.CRITICAL)
    from importlib.metadata import version

    from sglang.srt.server_args import ServerArgs

    # the same parser as sglang.srt.server_args.prepare_server_args (0.5.10+)
    parser = argparse.ArgumentParser(prog="sglang serve")
    ServerArgs.add_cli_args(parser)
    actions = []
    for a in parser._actions:
        if isinstance(a, argparse._HelpAction):
            continue
        choices = a.choices
        if choices is not None and not isinstance(choices, (list, tuple)):
            choices = sorted(choices)
        actions.append(
            {
                "option_strings": list(a.option_strings),
                "dest": a.dest,
                "nargs": a.nargs,
                "const": _jsonable(a.const),
                "default": _jsonable(a.default),
                "type": _type_name(a.type),
                "choices": None if choices is None else [_jsonable(c) for c in choices],
                "required": a.required,
                "metavar": a.metavar if not isinstance(a.metavar, tuple) else list(a.metavar),
                "help": a.help if a.help is not argparse.SUPPRESS else "==SUPPRESS==",
                "action": type(a).__name__,
            }
        )
    fields = []
    if dataclasses.is_dataclass(ServerArgs):
        for f in dataclasses.fields(ServerArgs):
            if f.default is not dataclasses.MISSING:
                default = f.default
            elif f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
                default = f.default_factory()  # type: ignore[misc]
            else:
                default = None
            fields.append({"name": f.name, "default": _jsonable(default), "repr": f.repr})
        kind = "dataclass"
    else:
        import msgspec

        for f in msgspec.structs.fields(ServerArgs):
            if f.default is not msgspec.NODEFAULT:
                default = f.default
            elif f.default_factory is not msgspec.NODEFAULT:
                default = f.default_factory()
            else:
                default = None
            fields.append({"name": f.name, "default": _jsonable(default), "repr": True})
        kind = "msgspec"
    return {
        "sglang_version": version("sglang"),
        "generated_by": "scripts/gen_sim_spec.py",
        "prog": parser.prog,
        "server_args_kind": kind,
        "actions": actions,
        "fields": fields,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--python", help="python of a venv that has the real sglang")
    p.add_argument("--out", type=Path, help="output file (default: specs/sglang-<version>.json)")
    p.add_argument("--emit", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.emit:
        json.dump(emit(), sys.stdout)
        return 0
    if not args.python:
        p.error("--python is required")
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONWARNINGS="ignore")
    proc = subprocess.run(
        [args.python, str(Path(__file__).resolve()), "--emit"],
        capture_output=True,
        text=True,
        env=env,
    )
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        return proc.returncode
    spec = json.loads(proc.stdout)
    out = args.out or SPECS / f"sglang-{spec['sglang_version']}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(spec, indent=1, sort_keys=False) + "\n")
    print(f"{out}: {len(spec['actions'])} actions, {len(spec['fields'])} fields")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
