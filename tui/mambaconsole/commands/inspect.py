"""``mambaconsole inspect FILE [--json]``: what a server log, a /metrics body, a server-info
JSON or a GPU table says (version, memory budget, acceptance, outcome, findings)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from mambaconsole.errors import ConsoleError
from mambaconsole.sglang.inspect import KINDS, details, inspect_text, per_rank_memory
from mambaconsole.sglang.spec import DRAFTS_ONLY, WITH_BONUS, accept_rate_meaning
from mambaconsole.sglang.text import display_text

HELP = "what a server log, /metrics text, server-info JSON or GPU table says"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="the file to read ('-' for stdin)")
    parser.add_argument("--json", action="store_true", help="print the result as one JSON object")
    parser.add_argument("--kind", choices=KINDS, help="skip detection: read the file as this kind")


def _read(name: str) -> bytes:
    if name == "-":
        return sys.stdin.buffer.read()
    p = Path(name)
    try:
        return p.read_bytes()
    except FileNotFoundError:
        raise ConsoleError(f"{name}: no such file") from None
    except IsADirectoryError:
        raise ConsoleError(f"{name}: is a directory") from None
    except OSError as exc:
        raise ConsoleError(f"{name}: {exc.strerror or exc}") from None


def _num(v, unit: str = "") -> str:
    if v is None:
        return "not reported"
    return f"{v:g}{unit}" if isinstance(v, float) else f"{v}{unit}"


def _human(r: dict, extra: list[tuple[str, str]] = ()) -> str:
    """The readable summary: the JSON result's known values (absent ones left out), then
    ``extra`` lines (:func:`mambaconsole.sglang.inspect.details`), then the findings."""
    lines = [f"kind: {r['kind']}"]
    if r["sglang_version"]:
        lines.append(f"SGLang version: {r['sglang_version']}")
    if r["kind"] == "log":
        lines.append(f"boots: {r['boots']}   ranks: {', '.join(r['ranks']) or '-'}")
    if r["kind"] in ("log", "server_info"):
        lines.append(f"outcome: {r['outcome']}")
    f = r["failure"]
    if f:
        lines.append(f"failure: phase {f['phase'] or 'unknown'}, {f['exception'] or 'exception not shown'}"
                     + (f" on {f['rank']}" if f["rank"] else ""))
        if f["message"]:
            lines.append("  " + display_text(f["message"].splitlines()[0])[:300])
    m = r["memory_gb"]
    if any(v is not None for v in m.values()):
        lines.append("memory (GB): " + ", ".join(f"{k} {_num(v)}" for k, v in m.items() if v is not None))
    if r["mamba_slots"] is not None:
        lines.append(f"mamba slots: {r['mamba_slots']}")
    c = r["concurrency"]
    if any(v is not None for v in c.values()):
        lines.append(f"concurrency: requested {_num(c['requested'])}, effective {_num(c['effective'])}"
                     + (f", {c['slots_per_request']} slots per request" if c["slots_per_request"] else ""))
    d = r["last_decode"]
    if d:
        lines.append("last decode: " + ", ".join(f"{k} {_num(v)}" for k, v in d.items() if v is not None))
        if d["accept_rate"] is not None:
            meaning = accept_rate_meaning(r["sglang_version"])
            lines.append("  accept rate = " + {
                DRAFTS_ONLY: "accepted drafts / proposed drafts (SGLang 0.5.11+)",
                WITH_BONUS: "accepted tokens incl. the bonus token / draft tokens (SGLang 0.5.10 and older)",
            }.get(meaning, "as printed; its meaning changed in 0.5.11 and this input names no version"))
    s = r["spec"]
    if s["enabled"] is False:
        lines.append("speculative decoding: off")
    elif s["enabled"]:
        lines.append(f"speculative decoding: {s['batches']} batches, mean accept len {_num(s['mean_accept_len'])}"
                     + (" — COLLAPSED (all drafts rejected)" if s["collapsed"] else ""))
    for g in r["gpus"]:
        lines.append(f"GPU{g['index']} {g['name'] or ''}: {g['memory_used_mib']:g} / {g['memory_total_mib']:g} MiB"
                     + (f", {g['utilization_pct']:g} %" if g["utilization_pct"] is not None else ""))
    if r["metrics"]:
        lines.append("metrics: " + ", ".join(f"{k} {'no data' if v is None else v}"
                                             for k, v in r["metrics"].items() if k not in ("label_names",)))
    lines += [f"{label}: {display_text(text)}" for label, text in extra]
    for fd in r["findings"]:
        lines.append(f"! {fd['code']}: {display_text(fd['message'])}")
    return "\n".join(lines)


NOT_SEEN = "—"


def _cell(v) -> str:
    """One per-rank value: as printed, or NOT_SEEN when the rank printed no such line."""
    if v is None:
        return NOT_SEEN
    return str(v) if isinstance(v, int) else f"{v:g}"


def _finite(v):
    """JSON has no NaN/Infinity: such values (e.g. inside a ServerArgs dump) become null."""
    if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))):
        return None
    if isinstance(v, dict):
        return {str(k): _finite(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_finite(x) for x in v]
    if v is None or isinstance(v, (str, int, float, bool)):
        return v
    return str(v)


def run(args: argparse.Namespace) -> int:
    text = _read(args.file).decode("utf-8", "replace")
    result = inspect_text(text, kind=args.kind)
    if args.json:
        print(json.dumps(_finite(result), allow_nan=False))
        return 0
    print(_human(result, details(text, result["kind"])))
    if result["kind"] == "log":
        ranks = per_rank_memory(text)
        if len(ranks) > 1:
            print(f"memory per rank (GB; {NOT_SEEN} = the rank printed no such line):")
            for rank, m in ranks.items():
                bs = m.pop("graph_batch_sizes")
                print(f"  {rank:<16} " + ", ".join(f"{k} {_cell(v)}" for k, v in m.items())
                      + (f", graph bs {len(bs)} sizes up to {max(bs)}" if bs else ""))
    return 0
