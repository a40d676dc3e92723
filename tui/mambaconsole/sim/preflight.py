"""The simulated node's answer to a pre-flight resolve, in ``mambaconsole resolve --json``'s shape.

On a real node the resolver runs SGLang's own ``prepare_server_args``; the simulated node has no
SGLang, so ``python -m mambaconsole.sim --sim-version V --sim-resolve SGLANG_ARGS...`` answers
from the simulator's own resolution (:mod:`mambaconsole.sim.resolve`) and bundled flag spec,
in the JSON of issue 4::

    {"sglang_version", "python", "ok", "elapsed_s", "usage_error", "error", "fields", "messages",
     "simulated": true}

``--sim-params`` prints the option metadata of the bundled spec (option strings, dest,
default, choices, type, nargs, help, deprecated) as a JSON list.
"""

from __future__ import annotations

import argparse
import difflib
import sys
import time
from typing import Any

from mambaconsole.sglang.flags import explain_unknown_flags
from mambaconsole.sim import flags as simflags
from mambaconsole.sim.model import QWEN36_27B, SimGPU
from mambaconsole.sim.resolve import Failure, resolve


class _ArgError(Exception):
    pass


class _RaisingParser(argparse.ArgumentParser):
    def error(self, message):  # noqa: D401 - argparse API
        raise _ArgError(message)


def _jsonable(v: Any) -> Any:
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    return repr(v)


def _given(version: str, argv: list[str]) -> dict[str, tuple[Any, str]]:
    """dest -> (value, option string) for the options present in ``argv`` (SUPPRESS defaults)."""
    parser, _ = simflags.build_parser(version, prefer_real=False)
    options = {}
    for action in parser._actions:
        action.default = argparse.SUPPRESS
        action.required = False
        for opt in action.option_strings:
            options[opt] = action.dest
    ns, _ = parser.parse_known_args(argv)
    used: dict[str, str] = {}
    for token in argv:
        opt = token.split("=", 1)[0]
        if opt in options:
            used.setdefault(options[opt], opt)
    return {dest: (value, used.get(dest)) for dest, value in vars(ns).items()}


def params(version: str) -> list[dict[str, Any]]:
    """Option metadata of SGLang ``version``'s parser, from the bundled spec."""
    out = []
    for a in simflags.load_spec(version)["actions"]:
        out.append({
            "option_strings": a["option_strings"], "dest": a["dest"], "default": a["default"],
            "choices": a["choices"], "type": a["type"], "nargs": a["nargs"], "help": a["help"],
            "deprecated": a["action"].startswith("Deprecated"),
        })
    return out


def resolve_report(version: str, argv: list[str], gpu: SimGPU | None = None) -> dict[str, Any]:
    """Resolve ``argv`` as the simulated SGLang ``version`` would; never raises for bad argv."""
    t0 = time.perf_counter()
    gpu = gpu or SimGPU.parse("RTX PRO 6000 Blackwell,96")
    report: dict[str, Any] = {
        "sglang_version": version, "python": sys.executable, "ok": False, "elapsed_s": 0.0,
        "usage_error": None, "error": None, "fields": {}, "messages": [], "simulated": True,
    }
    spec = simflags.load_spec(version)
    parser = simflags._build_from_spec(spec)
    parser.__class__ = _RaisingParser
    known = {o for a in spec["actions"] for o in a["option_strings"]}
    try:
        ns, rest = parser.parse_known_args(argv)
        if rest:
            unknown = [t.split("=", 1)[0] for t in rest if t.startswith("-")]
            raise _ArgError(f"unrecognized arguments: {' '.join(rest)}") if not unknown else _Unknown(unknown, rest)
    except _Unknown as exc:
        suggestions = {}
        for flag in exc.flags:
            if "_" in flag and flag.replace("_", "-") in known:
                suggestions[flag] = f"unknown in SGLang {version}; did you mean `{flag.replace('_', '-')}`? (SGLang's options use dashes)"
            else:
                close = difflib.get_close_matches(flag, sorted(known), n=1, cutoff=0.75)
                suggestions[flag] = f"unknown in SGLang {version}; did you mean `{close[0]}`?" if close else f"unknown in SGLang {version}"
        # what SGLang's releases renamed or removed: the console's one table, as for a real node
        report["usage_error"] = explain_unknown_flags(
            {"message": f"sglang serve: error: unrecognized arguments: {' '.join(exc.rest)}",
             "unknown_flags": exc.flags, "suggestions": suggestions}, version)
        report["elapsed_s"] = round(time.perf_counter() - t0, 4)
        return report
    except _ArgError as exc:
        report["usage_error"] = explain_unknown_flags(
            {"message": f"sglang serve: error: {exc}", "unknown_flags": [], "suggestions": {}}, version)
        report["elapsed_s"] = round(time.perf_counter() - t0, 4)
        return report
    fields = simflags.field_values(version, ns)
    given = _given(version, argv)
    renames = simflags.DEST_TO_FIELD_0_5_11 if version == "0.5.11" else {}
    given_by_field = {renames.get(d, d): v for d, v in given.items()}
    defaults = {f["name"]: f["default"] for f in spec["fields"]}
    try:
        r = resolve(version, fields, QWEN36_27B, gpu)
        values, changed, warnings = r.fields, r.changed, r.warnings
        report["ok"] = True
    except Failure as failure:
        part = failure.partial
        values, changed, warnings = (part.fields, part.changed, part.warnings) if part else (fields, {}, [])
        path, line, func, _code = failure.frames[-1]
        sglang = [fr for fr in failure.frames if fr[0].startswith("sglang/")]
        step = None
        for i, fr in enumerate(failure.frames):
            if fr[2] in ("__post_init__", "run_hook") and i + 1 < len(failure.frames):
                step = failure.frames[i + 1][2]
        report["error"] = {"type": failure.exc_type, "message": failure.message, "file": path, "line": line,
                           "function": func, "sglang_file": sglang[-1][0] if sglang else None,
                           "sglang_line": sglang[-1][1] if sglang else None, "step": step}
    field_to_dest = {renames.get(a["dest"], a["dest"]): a for a in spec["actions"]}
    for name in defaults:
        value = values.get(name)
        g = given_by_field.get(name)
        writes = changed.get(name) or []
        start = g[0] if g else defaults[name]
        if not writes or writes[-1].new == start:
            source = "cli" if g else "default"
        elif g and g[0] != "auto":
            source = "overridden"
        else:
            source = "derived"  # an explicit `auto` asks SGLang to choose
        action = field_to_dest.get(name)
        report["fields"][name] = {
            "value": _jsonable(value), "default": _jsonable(defaults[name]),
            "given": _jsonable(g[0]) if g else None,
            "option": _canonical_option(action) if action else None, "source": source,
            "writes": [{"old": _jsonable(w.old), "new": _jsonable(w.new), "function": w.function,
                        "file": w.file, "line": w.line, "declared_as": w.declared_as} for w in writes],
        }
    report["messages"] = [{"level": "WARNING", "logger": "sglang.srt.server_args", "message": w, "file": None, "line": None}
                          for w in warnings]
    report["elapsed_s"] = round(time.perf_counter() - t0, 4)
    return report


def _canonical_option(action: dict) -> str | None:
    """``--<dest with dashes>`` when it is one of the action's options, else its first long one."""
    want = "--" + action["dest"].replace("_", "-")
    opts = action["option_strings"]
    if want in opts:
        return want
    longs = [o for o in opts if o.startswith("--")]
    return longs[0] if longs else (opts[0] if opts else None)


class _Unknown(Exception):
    def __init__(self, flags: list[str], rest: list[str]):
        super().__init__(flags)
        self.flags = flags
        self.rest = rest
