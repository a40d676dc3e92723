"""``mambaconsole inspect FILE [--json] [--what-if-mamba-slots N]``: what a server log, a
/metrics body, a server-info JSON or a GPU table says (version, memory budget, acceptance,
Mamba slot capacity, outcome, findings).

``--json`` key ``capacity`` (logs and server info of hybrid Mamba models, else null; rules and
SGLang sources in :mod:`mambaconsole.sglang.capacity`):

- ``summary``: the one line the console's speculative pane shows
  (``held 4.0/req · reserved 5/req · cap 8: 8/40 idle``);
- ``pool_slots``: Mamba pool slots (``max_mamba_cache_size``); ``cap``: effective
  ``max_running_requests``; ``requested``: the configured one (null = SGLang's default);
- ``reserved_per_request``: slots the cap reserves per request; ``reserved_source``:
  ``"sglang"`` (its cap warning said it), ``"rule"`` (SGLang's rule on the resolved strategy,
  radix cache and overlap scheduler), ``"inferred"`` (pool // R == cap), or null;
- ``held_per_request``: slots a running request really holds (decode lines' ``mamba num`` /
  ``mamba usage`` × pool over running), ``held_tolerance`` (± slots), ``held_lines``;
- ``idle_at_cap``: slots unused with ``cap`` requests each holding ``held_per_request``;
  ``used_at_cap``: that use as a fraction of the pool;
- ``running``, ``queue``: the last decode line; ``peak_running``: the most running seen;
- ``verdict``: why requests queue, ``"admission cap"``, ``"mamba pool full"``, ``"KV pool
  full"`` or null; ``verdict_reason``: one line;
- ``per_slot_gb``: Mamba state (conv + ssm) GiB per slot; ``kv_bytes_per_token``: KV pool
  bytes per token; ``kv_tokens``: KV pool tokens;
- ``what_if_fit_peak``: the what-if for the smallest pool that admits ``peak_running``
  (null when none is smaller); ``what_if``: the what-if for ``--what-if-mamba-slots N``
  (null when not asked). A what-if is ``{pool_slots, concurrency, freed_gb, extra_kv_tokens,
  kv_growth}`` (freed GiB negative when the pool grows; kv_growth a fraction of today's pool).

``--json`` key ``multinode`` (a log whose ServerArgs dump says ``nnodes`` > 1, else null):
``nnodes``, ``node_rank``, ``dist_init_addr`` and ``says``, what the log shows of that rank
(waiting at distributed init, the store it cannot reach, a peer gloo saw close, torch's
timeout; :func:`mambaconsole.sglang.multinode.log_says`); the text output's ``run across
nodes:`` line.

Units: a key ending ``_gb`` (``memory_gb``, ``per_slot_gb``, ``freed_gb``) holds SGLang's "GB",
which is bytes / 1024³, i.e. GiB (:mod:`mambaconsole.units`); the keys keep SGLang's word, the
readable text says GiB and says once that SGLang's log calls them "GB".
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from mambaconsole.bounded import regular_file
from mambaconsole.errors import ConsoleError
from mambaconsole.sglang.events import TorchOom
from mambaconsole.sglang.inspect import (
    KINDS, details, detect_kind, inspect_log_blocks, inspect_text, no_capacity_reason, per_rank_memory,
)
from mambaconsole.sglang.spec import DRAFTS_ONLY, WITH_BONUS, accept_rate_meaning
from mambaconsole.sglang.text import display_text, shorten
from mambaconsole.units import SGLANG_GB

HELP = "what a server log, /metrics text, server-info JSON or GPU table says"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="the file to read ('-' for stdin)")
    parser.add_argument("--json", action="store_true", help="print the result as one JSON object")
    parser.add_argument("--kind", choices=KINDS, help="skip detection: read the file as this kind")
    parser.add_argument("--what-if-mamba-slots", type=int, metavar="N",
                        help="also show what --max-mamba-cache-size N would give (concurrency, freed GiB, KV tokens)")
    parser.add_argument("--config", metavar="CONFIG_JSON",
                        help="a log: also predict its boot's memory budget from the model's config.json "
                             "(SGLang's sizing rules) and show it beside what the log said (key 'prediction')")
    parser.add_argument("--sglang-version", metavar="V", help="with --config: the sizing rules' version when the log "
                                                                "does not say (default: the newest known)")
    parser.add_argument("--sim-rules", action="store_true",
                        help="with --config: the log came from mambaconsole.sim (its extra_buffer model)")


def _num(v, unit: str = "") -> str:
    if v is None:
        return "not reported"
    return f"{v:g}{unit}" if isinstance(v, float) else f"{v}{unit}"


def _human(r: dict, extra: list[tuple[str, str]] = (), asked: int | None = None) -> str:
    """The readable summary: the JSON result's known values (absent ones left out), then
    ``extra`` lines (:func:`mambaconsole.sglang.inspect.details`), then the findings.
    ``asked``: the ``--what-if-mamba-slots`` N (a line says why when the input has nothing for it)."""
    lines = [f"kind: {r['kind']}"]
    if r["sglang_version"]:
        lines.append(f"SGLang version: {r['sglang_version']}")
    elif r["kind"] in ("log", "server_info"):
        lines.append("SGLang version: not shown in this input")
    if r["kind"] == "log":
        m = r.get("model") or {}
        if m.get("architecture") or m.get("dtype"):
            lines.append(f"model: {m.get('architecture') or 'class not shown'}, "
                         f"dtype {m.get('dtype') or 'not shown'} (its Load weight end line)")
        else:
            lines.append("model: not shown in this input (no Load weight end line)")
        lines.append(f"boots: {r['boots']}   ranks: {', '.join(r['ranks']) or '-'}")
    if r["kind"] in ("log", "server_info"):
        lines.append(f"outcome: {r['outcome']}")
    mn = r.get("multinode")
    if mn:
        lines.append(f"run across nodes: rank {mn['node_rank']} of {mn['nnodes']} (--dist-init-addr "
                     f"{mn['dist_init_addr'] or 'not given'}): {mn['says']}")
    f = r["failure"]
    if f:
        lines.append(f"failure: phase {f['phase'] or 'unknown'}, {f['exception'] or 'exception not shown'}"
                     + (f" on {f['rank']}" if f["rank"] else ""))
        if f["message"]:
            lines.append("  " + shorten(display_text(f["message"].splitlines()[0]), 600))
        if f.get("where"):
            lines.append("  raised at " + display_text(f["where"]))
        if f.get("oom"):
            lines.append("  out of memory: " + TorchOom(**{k: v for k, v in f["oom"].items() if k != "fragmentation"}).describe())
    m = r["memory_gb"]
    if any(v is not None for v in m.values()):
        lines.append(f"memory (GiB; {SGLANG_GB}): " + ", ".join(f"{k} {_num(v)}" for k, v in m.items() if v is not None))
    elif r["kind"] == "log":
        lines.append(f"memory (GiB; {SGLANG_GB}): not shown in this input (no load, pool or graph line)")
    cap = r.get("capacity")
    if cap:
        lines += capacity_lines(cap)
    elif r["mamba_slots"] is not None:
        lines.append(f"mamba slots: {r['mamba_slots']}")
    if asked is not None and not cap:
        lines.append(f"what-if --max-mamba-cache-size {asked}: nothing to add: {no_capacity_reason(r)}")
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


def _what_if_line(w: dict) -> str:
    """One what-if in words; a part the input cannot give says which fact it lacks."""
    s = f"what-if --max-mamba-cache-size {w['pool_slots']}: concurrency " + (
        "unknown (slots reserved per request not shown)" if w["concurrency"] is None else str(w["concurrency"]))
    if w["freed_gb"] is None:
        s += "; memory freed unknown (no Mamba pool size and per-slot cost: 'Mamba Cache is allocated')"
    else:
        s += f", {'frees' if w['freed_gb'] >= 0 else 'takes'} {abs(w['freed_gb']):.3f} GiB"
        if w["extra_kv_tokens"] is not None:
            s += f" = {w['extra_kv_tokens']:+,} KV tokens"
            if w["kv_growth"] is not None:
                s += f" ({w['kv_growth'] * 100:+.1f} %)"
    return s


def capacity_lines(c: dict) -> list[str]:
    """The readable Mamba capacity lines: held vs reserved slots, the queueing verdict, the
    per-slot and per-token costs, the what-ifs."""
    src = {"sglang": "as SGLang said", "rule": "SGLang's rule", "inferred": "pool / cap"}.get(c["reserved_source"])
    out = ["mamba slots: " + c["summary"] + (f" (reserved: {src})" if src else "")]
    if c["verdict"] is not None:
        out.append(f"  queueing: {c['verdict']} ({c['verdict_reason']})")
    costs = []
    if c["per_slot_gb"] is not None:
        costs.append(f"{c['per_slot_gb']:.4f} GiB per slot (conv + ssm)")
    if c["kv_bytes_per_token"] is not None:
        costs.append(f"KV {c['kv_bytes_per_token']:,.0f} bytes per token")
    if costs:
        out.append("  cost: " + ", ".join(costs))
    for key in ("what_if_fit_peak", "what_if"):
        if c.get(key):
            out.append("  " + _what_if_line(c[key]) + (" (fits the peak running)" if key == "what_if_fit_peak" else ""))
    return out


NOT_SEEN = "—"


def _cell(v) -> str:
    """One per-rank value: as printed, or NOT_SEEN when the rank printed no such line."""
    if v is None:
        return NOT_SEEN
    return str(v) if isinstance(v, int) else f"{v:g}"


def _pcell(v) -> str:
    """A prediction row's value: numbers as _cell, a [low, high] range, text as is."""
    if isinstance(v, list):
        return "-".join(_pcell(x) for x in v)
    return v if isinstance(v, str) else _cell(v)


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


#: bytes read to tell the kind of a file; a file no longer than this is read as one text (a
#: pasted report's quoted messages need it whole); a longer log streams through the run fold
#: line by line (memory bounded by what the fold keeps), the other kinds are read whole
HEAD_BYTES = 1 << 20
#: a physical log line longer than this is cut there (SGLang's longest, a ServerArgs dump: ~10 KiB)
MAX_LINE_BYTES = 8 << 20
#: bytes of a /metrics body, server info or GPU table read at most (real ones: well under 1 MiB)
WHOLE_BYTES = 64 << 20


#: bytes read at a time from a long log (into one buffer, used again; larger blocks than this
#: cost more in page faults than they save in calls: 200 MiB read in 1 MiB blocks took 53k faults)
READ_BYTES = 256 << 10


def _log_blocks(f, head: bytes):
    """The text of an open binary file whose first bytes ``head`` were read already, a block
    of whole lines at a time (each ending with ``\\n``; a last line without one as it is):
    UTF-8 with invalid bytes replaced (U+FFFD, as the parser decodes a line of bytes), one
    decode per read. A line longer than :data:`MAX_LINE_BYTES` is cut there (its rest dropped).
    Each read goes into the same buffer, and a block is decoded straight from it: no fresh
    MiB of memory per read (the page faults cost more than the copies)."""
    rest = b""  # the start of a line that the last read cut
    skipping = False  # inside a line longer than MAX_LINE_BYTES: its rest is dropped
    buf = bytearray(READ_BYTES)
    view = memoryview(buf)
    src, n = head, len(head)
    while n:
        nl = src.find(b"\n", 0, n)
        if nl < 0:
            rest += src[:n]
        else:
            line = rest + src[:nl + 1]  # the line the last read cut, whole
            if skipping:
                skipping = False
            else:
                yield line.decode("utf-8", "replace")
            cut = src.rfind(b"\n", 0, n) + 1
            if cut > nl + 1:
                yield str((view if src is buf else memoryview(src))[nl + 1:cut], "utf-8", "replace")
            rest = bytes(src[cut:n])
        if len(rest) > MAX_LINE_BYTES and not skipping:  # /dev/zero on stdin: never one unbounded line
            yield rest[:MAX_LINE_BYTES].decode("utf-8", "replace") + "\n"
            rest, skipping = b"", True
        elif skipping:
            rest = b""
        src, n = buf, f.readinto(buf) or 0
    if rest:
        yield rest.decode("utf-8", "replace")


def _inspect(args: argparse.Namespace, n: int | None):
    """(result, the text when held whole, the log's summary or None)."""
    if args.file == "-":
        f = sys.stdin.buffer
    else:
        try:
            regular_file(args.file)  # a FIFO would hang the open, /dev/zero never ends
            f = open(args.file, "rb")
        except ValueError as exc:
            raise ConsoleError(str(exc)) from None
        except FileNotFoundError:
            raise ConsoleError(f"{args.file}: no such file") from None
        except IsADirectoryError:
            raise ConsoleError(f"{args.file}: is a directory") from None
        except OSError as exc:
            raise ConsoleError(f"{args.file}: {exc.strerror or exc}") from None
    try:
        head = f.read(HEAD_BYTES)
        more = f.read(1) if len(head) == HEAD_BYTES else b""
        if not more:  # the whole file is in hand: the one-text path
            text = head.decode("utf-8", "replace")
            result = inspect_text(text, kind=args.kind, what_if_slots=n)
            return result, text, None
        head += more
        kind = args.kind or detect_kind(head.decode("utf-8", "replace"))
        if kind != "log":  # /metrics, server info, GPU tables: read whole, up to WHOLE_BYTES
            body = head + f.read(WHOLE_BYTES + 1 - len(head))
            if len(body) > WHOLE_BYTES:
                raise ConsoleError(f"{args.file}: a {kind.replace('_', ' ')} longer than {WHOLE_BYTES >> 20} MiB: "
                                   "not read (no real one is this long; --kind log reads it as a log)")
            text = body.decode("utf-8", "replace")
            return inspect_text(text, kind=kind, what_if_slots=n), text, None
        result, summary = inspect_log_blocks(_log_blocks(f, head), forced=args.kind == "log", what_if_slots=n)
        return result, None, summary
    finally:
        if f is not sys.stdin.buffer:
            f.close()


#: bytes of a long log's end read again for a rank's place in a run across nodes
MULTINODE_TAIL = 256 << 10


def _multinode(args: argparse.Namespace, result: dict, text: str | None) -> dict | None:
    """A rank of a run across nodes (its ServerArgs dump says ``nnodes`` > 1): what its log says
    of it (:func:`mambaconsole.sglang.multinode.log_says`, over the whole text or a long file's
    last :data:`MULTINODE_TAIL` bytes; a long log on stdin cannot be read again: says so)."""
    from mambaconsole.sglang.multinode import log_phase, log_says

    sa = result.get("server_args")
    if not isinstance(sa, dict) or not isinstance(sa.get("nnodes"), int) or sa["nnodes"] <= 1:
        return None
    if text is None:
        if args.file == "-":
            return {"nnodes": sa["nnodes"], "node_rank": sa.get("node_rank"), "dist_init_addr": sa.get("dist_init_addr"),
                    "says": "a long log on stdin: its end cannot be read again (give the file)"}
        with open(args.file, "rb") as f:
            f.seek(max(0, os.fstat(f.fileno()).st_size - MULTINODE_TAIL))
            text = f.read().decode("utf-8", "replace")
    return log_says(sa, log_phase(text.splitlines()))


def _prediction(args: argparse.Namespace, result: dict) -> dict | None:
    """``--config``: :func:`mambaconsole.sglang.budget.versus_log` for the log's boot."""
    path = getattr(args, "config", None)
    if path is None:
        return None
    from mambaconsole.sglang import budget

    if result.get("kind") != "log":
        raise ConsoleError(f"--config predicts a boot from a server log; {args.file} reads as {result.get('kind')}")
    try:
        with open(path, encoding="utf-8") as f:
            config = json.load(f)
    except (OSError, ValueError) as exc:
        raise ConsoleError(f"--config {path}: {exc}") from None
    try:
        return budget.versus_log(result, config, version=args.sglang_version, simulated=args.sim_rules)
    except budget.BudgetError as exc:
        raise ConsoleError(f"--config: {exc}") from None


def run(args: argparse.Namespace) -> int:
    n = getattr(args, "what_if_mamba_slots", None)
    if n is not None and n < 1:
        raise ConsoleError(f"--what-if-mamba-slots {n}: needs at least 1 slot")
    result, text, summary = _inspect(args, n)
    if result.get("kind") == "log":
        result["multinode"] = _multinode(args, result, text)
    pred = _prediction(args, result)
    if pred is not None:
        result["prediction"] = pred
    if args.json:
        print(json.dumps(_finite(result), allow_nan=False))
        return 0
    src = summary if summary is not None else text
    print(_human(result, details(src, result["kind"]), asked=n))
    if pred is not None:
        print(f"prediction (SGLang {pred['version'] or 'version not stated'}: sizing rules of {pred['rules']}"
              + (", simulator's" if pred["simulated_rules"] else "") + ") vs the log:")
        for what, p, logged in pred["rows"]:
            print(f"  {what:38s} predicted {_pcell(p):<28} log {_pcell(logged)}")
    if result["kind"] == "log":
        ranks = per_rank_memory(src)
        if len(ranks) > 1:
            sizes = {rank: m.pop("graph_batch_sizes") for rank, m in ranks.items()}
            # only the lines some rank printed: a column no rank has is named once, not N times
            keys = [k for k in next(iter(ranks.values())) if any(m[k] is not None for m in ranks.values())]
            none = [k for k in next(iter(ranks.values())) if k not in keys]
            if not keys and not any(sizes.values()):
                return 0  # "memory: not shown in this input" said it
            print(f"memory per rank (GiB; {NOT_SEEN} = the rank printed no such line):")
            for rank, m in ranks.items():
                bs = sizes[rank]
                print(f"  {rank:<16} " + ", ".join(f"{k} {_cell(m[k])}" for k in keys)
                      + (f", graph bs {len(bs)} sizes up to {max(bs)}" if bs else ""))
            if none:
                print(f"  no rank printed: {', '.join(none)}")
    return 0
