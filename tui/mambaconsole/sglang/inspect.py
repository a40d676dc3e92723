"""What a captured file says: detection of its kind and the ``inspect --json`` object.

:func:`inspect_text` returns exactly the object documented for ``mambaconsole inspect
--json`` (issue 3): every key present, None where the input does not tell, numbers as
SGLang printed them, memory in SGLang's "GB". ``capacity`` is the Mamba slot picture
(:meth:`mambaconsole.sglang.capacity.Capacity.as_json` plus ``what_if``) or None.
``failure.oom`` (added in session 3): PyTorch's OOM numbers in GiB (``tried_gib``, ``gpu``,
``capacity_gib``, ``free_gib``, ``in_use_gib``, ``allocated_gib``, ``reserved_unallocated_gib``, ``graph_pools_gib``,
``fragmentation``; :class:`mambaconsole.sglang.events.TorchOom`), None when the failure is no
PyTorch OOM. ``failure.where`` (issue 16): ``sglang/<path>.py:LINE in FUNCTION``, the innermost
frame of SGLang's own code in the failure's traceback, None when the log shows none.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable
from typing import Any

from mambaconsole.bounded import JsonTooDeep, json_loads
from mambaconsole.errors import ConsoleError
from mambaconsole.sglang import events as E
from mambaconsole.sglang.gpu import looks_like_gpu_table, parse_gpu_table, process_panels
from mambaconsole.sglang.metrics import looks_like_metrics, parse_metrics
from mambaconsole.sglang.capacity import Capacity, capacity
from mambaconsole.sglang.server_info import looks_like_server_info, parse_server_info
from mambaconsole.sglang.block_fold import BlockFold
from mambaconsole.sglang.run_fold import RunFold
from mambaconsole.sglang.summary import Finding, LogSummary, RankMemory, rank_sort_key, summary_of

__all__ = ["detect_kind", "inspect_text", "inspect_log_lines", "inspect_log_blocks", "fold_lines", "fold_blocks",
           "empty_result", "KINDS"]

KINDS = ("log", "metrics", "server_info", "gpu_table")


def empty_result(kind: str) -> dict[str, Any]:
    return {
        "kind": kind, "sglang_version": None, "model": {"architecture": None, "dtype": None},
        "ranks": [], "boots": 0, "outcome": "unknown",
        "failure": None,
        "memory_gb": {"weights": None, "kv_cache": None, "mamba_conv": None, "mamba_ssm": None,
                      "mamba_intermediate": None, "mamba_total": None, "cuda_graph": None,
                      "avail_after_load": None},
        "mamba_slots": None,
        "concurrency": {"requested": None, "effective": None, "slots_per_request": None},
        "last_decode": None,
        "spec": {"enabled": None, "batches": 0, "mean_accept_len": None, "collapsed": False},
        "server_args": None, "metrics": None, "gpus": [], "findings": [], "capacity": None,
        "multinode": None,  # a rank of a run across nodes: what its log says (commands/inspect.py)
    }


def detect_kind(text: str) -> str:
    """``"server_info"`` (a JSON object), ``"metrics"`` (Prometheus text with ``sglang:``
    series), ``"gpu_table"`` (nvidia-smi / CSV / gpustat), else ``"log"``."""
    s = text.lstrip()
    if s.startswith("{"):
        try:
            obj = json_loads(s)
        except JsonTooDeep:
            return "server_info"  # an object, too deep: parse_server_info says so
        except ValueError:
            obj = None
        if isinstance(obj, dict):
            return "server_info"
    if looks_like_metrics(text):
        return "metrics"
    if looks_like_gpu_table(text):
        return "gpu_table"
    return "log"


@functools.lru_cache(maxsize=1)
def _summary(text: str) -> LogSummary:
    """The log's summary: the run fold (:class:`~mambaconsole.sglang.run_fold.RunFold`) over
    its lines, once per text (``inspect LOG`` reads it three times: the JSON shape,
    :func:`details`, :func:`per_rank_memory`)."""
    return fold_lines(text.split("\n"))


def fold_lines(lines: Iterable[str | bytes]) -> LogSummary:
    """Stream physical lines through the parser and the run fold: memory bounded by what the
    fold keeps, not by the number of lines (``inspect`` of a large log)."""
    parser = E.LogParser()
    fold = RunFold()
    feed = fold.feed
    chunk: list = []
    for line in lines:
        chunk.append(line)
        if len(chunk) >= 256:
            for ev in parser.feed_many(chunk):
                feed(ev)
            chunk = []
    if chunk and chunk[-1] in ("", b""):
        chunk.pop()  # the empty piece after the last newline
    for ev in parser.feed_many(chunk):
        feed(ev)
    for ev in parser.flush():
        feed(ev)
    return summary_of(fold)


def fold_blocks(blocks: Iterable[str]) -> LogSummary:
    """:func:`fold_lines` of a log given as blocks of whole lines (each line ending with
    ``\\n``; the last may not), the same summary at a fraction of the cost
    (:class:`~mambaconsole.sglang.block_fold.BlockFold`): ``inspect`` of a large file."""
    folder = BlockFold()
    for block in blocks:
        folder.feed(block)
    return summary_of(folder.close())


def _memory_rows(s: LogSummary) -> dict[str, dict[str, Any]]:
    mem = s.last.memory
    ranks = sorted(set(s.ranks) | set(mem), key=rank_sort_key)
    return {(r or "main"): (mem[r] if r in mem else RankMemory(r)).detail() for r in ranks}


def per_rank_memory(text: str | LogSummary) -> dict[str, dict[str, Any]]:
    """Memory lines of the last boot per rank (rank tag or "main" → RankMemory.detail()) —
    for the readable summary. Every rank the log names has a row (the ranks of
    ``inspect``'s ``ranks``, plus "main" when the untagged main process printed memory
    lines); a rank that did not print a line has None there, never another rank's value.
    ``text``: the log, or its summary."""
    return _memory_rows(text if isinstance(text, LogSummary) else _summary(text))


def details(text: str | LogSummary, kind: str) -> list[tuple[str, str]]:
    """Readable ``(label, text)`` lines beyond the fixed JSON shape, for ``inspect``'s summary:
    for a log, the last boot's ready summary (KV pool tokens, chunked prefill, max prefill
    tokens, context length, free GPU memory after init: SGLang's ``max_total_num_tokens=``
    line, ``srt/managers/scheduler.py``); for server info, identity, the Mamba settings,
    memory at startup and the startup timings (``/server_info``, 0.5.9+; ``/get_server_info``
    before). Values as SGLang printed them, memory labelled GiB (SGLang's "GB" is bytes / 1024³:
    :mod:`mambaconsole.units`); absent ones are left out."""
    out: list[tuple[str, str]] = []
    if kind == "log":
        r = (text if isinstance(text, LogSummary) else _summary(text)).last.summary
        if r is not None:
            parts = [f"KV pool {r.max_total_num_tokens} tokens" if r.max_total_num_tokens is not None else None,
                     f"context_len {r.context_len}" if r.context_len is not None else None,
                     f"chunked_prefill_size {r.chunked_prefill_size}" if r.chunked_prefill_size is not None else None,
                     f"max_prefill_tokens {r.max_prefill_tokens}" if r.max_prefill_tokens is not None else None,
                     f"max_running_requests {r.max_running_requests}" if r.max_running_requests is not None else None,
                     f"free GPU memory after init {r.available_gpu_mem_gb:g} GiB"
                     if r.available_gpu_mem_gb is not None else None]
            out.append(("ready summary", ", ".join(p for p in parts if p)))
    elif kind == "server_info":
        si = parse_server_info(text)
        a = si.effective_args

        def pick(*keys: str) -> str:
            return ", ".join(f"{k} {json.dumps(a[k])}" for k in keys if k in a)

        ident = pick("model_path", "served_model_name", "tp_size", "dp_size", "pp_size", "port")
        if si.status:
            ident += f", status {si.status}"
        out.append(("server", ident))
        mamba = pick(*[k for k in a if "mamba" in k], "linear_attn_backend", "enable_hierarchical_cache")
        if mamba:
            out.append(("mamba", mamba))
        mem = si.memory
        mparts = [f"startup free {mem.startup_available_gb:g} GiB" if mem.startup_available_gb is not None else None,
                  f"token capacity {mem.token_capacity}" if mem.token_capacity is not None else None,
                  f"graphs by phase {json.dumps(mem.graph_by_phase)}" if mem.graph_by_phase else None]
        if any(mparts):
            out.append(("memory", ", ".join(p for p in mparts if p)))
        st = si.startup_time
        if isinstance(st, dict) and st:
            out.append(("startup (s)", ", ".join(f"{k} {v:.2f}" if isinstance(v, (int, float)) else f"{k} {v}"
                                                 for k, v in st.items())))
    return out


def no_capacity_reason(result: dict[str, Any]) -> str:
    """Why an ``inspect`` result (the ``--json`` object) has no Mamba slot picture
    (``capacity`` null) for a what-if to scale, from what the input shows: the Mamba pool's
    size and per-slot cost come from SGLang's ``Mamba Cache is allocated`` line (printed by
    ``MambaPool``, ``srt/mem_cache/memory_pool.py``, when the pool is allocated at start-up) and
    the slots in use from decode lines (``mamba num`` / ``mamba usage``)."""
    kind = result.get("kind")
    if kind not in ("log", "server_info"):
        return f"a {str(kind).replace('_', ' ')} shows no Mamba pool (a server log or server info does)"
    if kind == "server_info":
        return "this server info gives no Mamba pool size (max_mamba_cache_size) nor Mamba usage"
    f = result.get("failure") or {}
    died = (f.get("exception") or "the failure") + (f" in phase {f['phase']}" if f.get("phase") else "")
    if f and f.get("phase") in ("args", "load", "startup"):
        return (f"the server stopped ({died}) before SGLang printed its Mamba pool ('Mamba Cache is "
                "allocated'): no pool size or per-slot cost to scale; --config CONFIG_JSON (or mambaconsole "
                "plan) predicts the pool from the model's config.json")
    mem = result.get("memory_gb") or {}
    if any(mem.get(k) is not None for k in ("mamba_conv", "mamba_ssm", "mamba_total")):
        return ("its 'Mamba Cache is allocated' line gives the pool's memory but not its slots (early 2025 "
                "builds print no max_mamba_cache_size) and no decode line shows Mamba usage: no per-slot cost")
    return ("this input has no 'Mamba Cache is allocated' line (printed at start-up) and no decode line "
            "with Mamba usage: not a hybrid Mamba model's log, or those lines are not in it")


def _capacity_json(c: Capacity, what_if_slots: int | None) -> dict[str, Any] | None:
    """``capacity``: None when neither the pool size nor a decode line's Mamba figure is known
    (not a hybrid model: 0.5.9-0.5.13 resolve ``no_buffer`` for every model, so the strategy
    alone says nothing); else the Capacity object with ``what_if`` for ``what_if_slots`` (None when not
    asked)."""
    if c.pool_slots is None and c.held is None:
        return None
    out = c.as_json()
    out["what_if"] = c.what_if(what_if_slots).as_json() if what_if_slots is not None else None
    return out


def _log(s: LogSummary, prose: str | None, what_if_slots: int | None = None) -> dict[str, Any]:
    """The JSON object of a log's summary; ``prose``: the text when no line was SGLang's (its
    quoted messages become a finding)."""
    out = empty_result("log")
    out["sglang_version"] = s.version
    out["model"] = s.model()
    out["ranks"] = s.ranks
    out["boots"] = s.n_boots if any(b.n_events for b in s.boots) else 0
    out["outcome"] = s.outcome
    out["failure"] = s.failure.as_json() if s.failure else None
    out["memory_gb"] = s.memory_gb()
    out["mamba_slots"] = s.mamba_slots()
    out["concurrency"] = s.concurrency()
    out["last_decode"] = s.last_decode()
    out["spec"] = s.spec.as_json()
    out["server_args"] = s.last.server_args
    findings = [f.as_json() for f in s.findings]
    if prose is not None and not s.fold.n_sglang:
        quoted = quoted_messages(prose)
        if quoted:
            findings.append(Finding("quoted_only", "no log lines, only SGLang messages quoted in prose (not read as "
                                    "this run's log): " + "; ".join(q.message[:160] for q in quoted[:6])).as_json())
    out["findings"] = findings
    out["capacity"] = _capacity_json(s.capacity(), what_if_slots)
    return out


def _metrics(text: str) -> dict[str, Any]:
    m = parse_metrics(text)
    out = empty_result("metrics")
    out["metrics"] = m.as_json()
    out["memory_gb"].update({"weights": m.weight_memory_usage_gb, "kv_cache": m.kv_cache_memory_usage_gb,
                             "cuda_graph": m.graph_memory_usage_gb})
    if m.spec_exported:
        acc = m.spec_accept_length
        out["spec"] = {"enabled": bool(acc) if acc is not None else None, "batches": 0,
                       "mean_accept_len": acc if acc else None,
                       "collapsed": acc is not None and 0 < acc <= 1.005}
    findings = []
    if not m.spec_exported:
        findings.append(Finding("not_exported", "no sglang:spec_* series: not exported by this server"))
    if not any(n.startswith("sglang:mamba_") for n in m.samples):
        findings.append(Finding("not_exported", "no sglang:mamba_* series: not exported by this server"))
    if m.nan:
        findings.append(Finding("no_data", "NaN (no data yet): " + ", ".join(m.nan)))
    if m.dropped_lines:
        findings.append(Finding("lines_dropped", f"{m.dropped_lines} line(s) that are not exposition format ignored"))
    out["findings"] = [f.as_json() for f in findings]
    out["outcome"] = "unknown"
    return out


def _server_info(text: str, what_if_slots: int | None = None) -> dict[str, Any]:
    si = parse_server_info(text)
    out = empty_result("server_info")
    out["sglang_version"] = si.version
    out["outcome"] = "ready" if si.status == "ready" else ("starting" if si.status else "unknown")
    out["server_args"] = si.effective_args
    mem = si.memory
    out["memory_gb"].update({"weights": mem.weight_gb, "kv_cache": mem.kvcache_gb, "cuda_graph": mem.graph_gb})
    slots = si.effective_args.get("max_mamba_cache_size")
    out["mamba_slots"] = slots if isinstance(slots, int) and not isinstance(slots, bool) else None
    out["concurrency"] = {"requested": si.requested_max_running_requests,
                          "effective": si.effective_max_running_requests_per_dp, "slots_per_request": None}
    out["spec"] = {"enabled": si.spec_enabled, "batches": 0, "mean_accept_len": si.avg_spec_accept_length,
                   "collapsed": si.avg_spec_accept_length is not None and si.avg_spec_accept_length <= 1.005}
    findings = []
    for k, top, internal in si.disagreements:
        findings.append(Finding("server_info_disagrees",
                                f"{k}: top level {json.dumps(top)}, scheduler {json.dumps(internal)} (scheduler's value is effective)"))
    c = out["concurrency"]
    if c["requested"] is not None and c["effective"] is not None and c["effective"] < c["requested"]:
        findings.append(Finding("concurrency_capped", f"max_running_requests: requested {c['requested']}, effective {c['effective']}"))
    out["findings"] = [f.as_json() for f in findings]
    if out["mamba_slots"] is not None:
        out["capacity"] = _capacity_json(capacity(pool_slots=out["mamba_slots"], cap=c["effective"],
                                                  requested=c["requested"], args=si.effective_args), what_if_slots)
    return out


def _gpu(text: str) -> dict[str, Any]:
    gpus = parse_gpu_table(text)
    out = empty_result("gpu_table")
    out["gpus"] = [g.as_json() for g in gpus]
    findings = []
    if len(gpus) > 1:
        lo = min(g.memory_used_mib for g in gpus)
        for g in gpus:
            if g.memory_used_mib - lo > 1024 and len(g.processes) > 1:
                small = sorted(p.memory_mib for p in g.processes)[:-1]
                findings.append(Finding(
                    "gpu_extra_processes",
                    f"GPU{g.index} holds {g.memory_used_mib - lo:g} MiB more than the least used GPU; "
                    f"{len(g.processes)} processes on it, {len(small)} small ones with {sum(small):g} MiB together"))
    if not gpus:
        for i, panel in enumerate(process_panels(text), 1):
            if panel.rows:
                procs = "; ".join(f"GPU{g} PID {p.pid} {p.name or '?'} {p.memory_mib:g} MiB" for g, p in panel.rows)
                findings.append(Finding("gpu_processes_only",
                                        f"process panel {i}: {len(panel.rows)} process(es), no GPU rows: {procs}"))
            elif not panel.none_found:
                findings.append(Finding("gpu_processes_hidden",
                                        f"process panel {i} is empty without 'No running processes found': "
                                        "nvidia-smi in a container lists no processes of other PID "
                                        "namespaces (the host's); the GPU memory may still be in use"))
    out["findings"] = [f.as_json() for f in findings]
    return out


_QUOTED = re.compile(r"`([^`\n]{12,400})`|\"([^\"\n]{12,400})\"")


def quoted_messages(text: str) -> list[E.Event]:
    """SGLang messages quoted inside prose (a Markdown report, an issue): the known formats
    among its inline code spans and double-quoted strings, in order. They are what the
    writer saw, not this input's log lines: the summary does not fold them."""
    out = []
    for m in _QUOTED.finditer(text):
        ev = E.parse_line(m.group(1) or m.group(2))
        if not isinstance(ev, (E.Text, E.PythonWarning)):
            out.append(ev)
    return out


def _looks_like_log(s: LogSummary, text: str | None) -> bool:
    """Some line is SGLang's: an enveloped line (``[time rank] message``), a message in a
    known format (a traceback, a ready line, ...), or what the summary reads as an outcome or
    a failure (an argparse usage error), or prose that quotes SGLang's messages (a pasted
    report; ``text``: the input, when small enough to hold); not only plain text."""
    if s.fold.n_sglang:
        return True
    return (s.failure is not None or s.outcome not in (None, "unknown")
            or (text is not None and bool(quoted_messages(text))))


_NOT_SGLANG = ("not an SGLang log, server info, /metrics or GPU table: no line is in SGLang's log "
               "format ([YYYY-MM-DD HH:MM:SS] message) or a known SGLang message "
               "(--kind log reads it as a log anyway)")


def inspect_log_lines(lines: Iterable[str | bytes], *, prose: str | None = None, forced: bool = False,
                      what_if_slots: int | None = None) -> tuple[dict[str, Any], LogSummary]:
    """The ``inspect --json`` object of a log given as physical lines (streamed through the
    run fold, bounded memory) and its :class:`LogSummary`. ``prose``: the whole text when it is
    small enough to hold (a pasted report's quoted messages), else None; ``forced``: read as a
    log even when nothing is SGLang's. Raises ConsoleError when nothing is SGLang's."""
    s = fold_lines(lines)
    if not forced and not _looks_like_log(s, prose):
        raise ConsoleError(_NOT_SGLANG)
    return _log(s, prose, what_if_slots), s


def inspect_log_blocks(blocks: Iterable[str], *, forced: bool = False,
                       what_if_slots: int | None = None) -> tuple[dict[str, Any], LogSummary]:
    """:func:`inspect_log_lines` of a log given as blocks of whole lines (:func:`fold_blocks`)."""
    s = fold_blocks(blocks)
    if not forced and not _looks_like_log(s, None):
        raise ConsoleError(_NOT_SGLANG)
    return _log(s, None, what_if_slots), s


def _refuse_other_json(text: str) -> None:
    """Raise ConsoleError for a JSON object that is not SGLang's server info
    (:func:`~mambaconsole.sglang.server_info.looks_like_server_info`: ``model_path`` and
    ``tp_size``, or ``internal_states``), e.g. a run's ``status.json``, naming its first keys."""
    try:
        obj = json_loads(text)
    except ValueError:
        return  # not JSON at all, or too deep: parse_server_info says so
    if isinstance(obj, dict) and not looks_like_server_info(obj):
        keys = list(obj)[:8]
        raise ConsoleError("JSON, but not SGLang's server info (/server_info, /get_server_info): it has neither "
                           "model_path and tp_size nor internal_states; its keys: "
                           + (", ".join(keys) + (", ..." if len(obj) > len(keys) else "") if keys else "none"))


def inspect_text(text: str | bytes, kind: str | None = None, what_if_slots: int | None = None) -> dict[str, Any]:
    """The ``inspect --json`` object for a file's content. ``kind`` forces the detection;
    ``what_if_slots`` fills ``capacity.what_if`` for ``--max-mamba-cache-size N``. Raises
    ConsoleError for empty content and when the content is not of a readable kind (JSON that is
    not server info; text in which nothing is SGLang's, unless ``kind="log"``)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if not text.strip():
        raise ConsoleError("empty input: nothing to inspect")
    forced = kind is not None
    kind = kind or detect_kind(text)
    if kind == "log":
        s = _summary(text)
        if not forced and not _looks_like_log(s, text):
            raise ConsoleError(_NOT_SGLANG)
        return _log(s, text, what_if_slots)
    if kind == "server_info":
        _refuse_other_json(text)
        return _server_info(text, what_if_slots)
    if kind == "metrics":
        return _metrics(text)
    if kind == "gpu_table":
        return _gpu(text)
    raise ConsoleError(f"unknown kind {kind!r}; one of {', '.join(KINDS)}")
