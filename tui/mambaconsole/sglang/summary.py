"""Derived knowledge from a log's events: what ``inspect``, the run history and ``report``
show about a run — its boots, per-rank memory budget, effective concurrency, speculative
acceptance, Mamba capacity, outcome and findings.

Every claim comes from the run fold (:class:`mambaconsole.sglang.run_fold.RunFold`, whose
docstring holds the rules): :func:`summarize` runs it over the events and reads the result;
the live console runs the same fold line by line. This module adds the findings (one rule
each, below) and the JSON-shaped views.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from mambaconsole.sglang import events as E
from mambaconsole.sglang.capacity import Capacity, Sample, capacity, pool_from_usage
from mambaconsole.sglang.flags import usable
from mambaconsole.sglang.run_fold import (  # noqa: F401 - the fold's types, re-exported
    OUTCOMES, Boot, Failure, RankMemory, RunFold, is_draft_arch, rank_sort_key,
)
from mambaconsole.sglang.spec import SpecStats

__all__ = [
    "RankMemory", "Failure", "Finding", "Boot", "LogSummary", "summarize", "summary_of", "rank_sort_key",
    "OUTCOMES", "RunFold",
]

@dataclass(frozen=True)
class Finding:
    code: str
    message: str

    def as_json(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}


@dataclass
class LogSummary:
    boots: list[Boot]
    ranks: list[str]
    version: str | None
    outcome: str
    failure: Failure | None
    spec: SpecStats
    findings: list[Finding]
    #: the fold the summary reads (None for a summary built otherwise)
    fold: RunFold | None = None
    #: server starts in the log; ``boots`` holds the last of them (None: ``len(boots)``)
    n_boots: int | None = None

    def __post_init__(self) -> None:
        if self.n_boots is None:
            self.n_boots = len(self.boots)

    @property
    def last(self) -> Boot:
        return self.boots[-1]

    def memory_gb(self) -> dict[str, Any]:
        p = self.last.primary
        if p is None:
            return RankMemory(None).as_json()
        return p.as_json()

    def model(self) -> dict[str, Any]:
        """``{"architecture": "Qwen3NextForCausalLM", "dtype": "bfloat16"}`` from the last boot's
        target ``Load weight end`` line (SGLang's ``model_runner.py``: ``type=``, ``dtype=``) of
        the lowest rank that printed one; None where no such line shows it (the draft model's
        load never counts)."""
        ranks = [self.last.memory[k] for k in sorted(self.last.memory, key=rank_sort_key)]
        r = next((m for m in ranks if m.arch is not None or m.dtype is not None), None)
        return {"architecture": r.arch if r else None, "dtype": r.dtype if r else None}

    def mamba_slots(self) -> int | None:
        b = self.last
        p = b.primary
        if p is not None and p.mamba_slots is not None:
            return p.mamba_slots
        if b.capped is not None and b.capped.max_mamba_cache_size is not None:
            return b.capped.max_mamba_cache_size
        v = (b.server_args or {}).get("max_mamba_cache_size")
        if isinstance(v, int) and not isinstance(v, bool):
            return v
        # not printed: what the decode lines' mamba num / mamba usage pairs determine
        return pool_from_usage(b.usage_samples())

    def concurrency(self) -> dict[str, Any]:
        b = self.last
        req = (b.server_args or {}).get("max_running_requests")
        requested = req if isinstance(req, int) and not isinstance(req, bool) else None
        effective = None
        slots = None
        if b.capped is not None:
            effective = b.capped.effective
            slots = b.capped.slots_per_request
        elif b.summary is not None:
            effective = b.summary.max_running_requests
        return {"requested": requested, "effective": effective, "slots_per_request": slots}

    def capacity(self) -> Capacity:
        """The last boot's Mamba slot capacity (:mod:`mambaconsole.sglang.capacity`): pool
        size, effective and requested concurrency, SGLang's stated slots per request, the
        ``server_args=`` dump for SGLang's rule, the decode lines, and the primary rank's
        Mamba state (conv + ssm) and KV pool sizes."""
        b = self.last
        c = self.concurrency()
        p = b.primary
        state = None
        if p is not None and (p.mamba_conv is not None or p.mamba_ssm is not None):
            state = (p.mamba_conv or 0.0) + (p.mamba_ssm or 0.0)
        return capacity(pool_slots=self.mamba_slots(), cap=c["effective"], requested=c["requested"],
                        stated_slots_per_request=c["slots_per_request"], args=b.server_args,
                        samples=[Sample.of(d) for d in b.decodes], mamba_state_gb=state,
                        kv_gb=p.kv_cache if p else None, kv_tokens=p.kv_tokens if p else None,
                        peak_running=b.peak_running)

    def last_decode(self) -> dict[str, Any] | None:
        if not self.last.decodes:
            return None
        d = self.last.decodes[-1]
        return {"running": d.running, "token_usage": d.token_usage, "mamba_num": d.mamba_num,
                "mamba_usage": d.mamba_usage, "accept_len": d.accept_len, "accept_rate": d.accept_rate,
                "graph": d.graph, "gen_throughput": d.gen_throughput, "queue": d.queue}


# ---------------------------------------------------------------------------------------



def summary_of(fold: RunFold, version: str | None = None) -> LogSummary:
    """The :class:`LogSummary` of a fold as it stands (``version`` overrides the one the log
    names, for the accept rate's meaning)."""
    version = version or fold.version
    s = LogSummary(boots=fold.boots, ranks=fold.sorted_ranks(), version=version, outcome=fold.outcome,
                   failure=fold.failure, spec=fold.spec(version), findings=[], fold=fold,
                   n_boots=fold.n_boots)
    s.findings = _findings(s)
    return s


def summarize(events: Iterable[E.Event], version: str | None = None) -> LogSummary:
    """Run the fold over a log's events (in order) and summarize it."""
    return summary_of(RunFold().feed_all(events), version)


#: the flags that size the KV and Mamba pools and the CUDA graphs, as 0.5.9-0.5.13 name them;
#: a hint names each as the log's SGLang version accepts it (mambaconsole.sglang.flags.usable:
#: 0.5.23 takes --mamba-radix-cache-strategy and --cuda-graph-max-bs-decode instead)
_POOL_FLAGS = ("--mem-fraction-static", "--max-mamba-cache-size", "--mamba-full-memory-ratio",
               "--mamba-scheduler-strategy", "--cuda-graph-max-bs")


#: the flags that bound a serving batch's memory (prefill chunk, concurrency) or the room the
#: static pools leave for it
_SERVING_FLAGS = ("--mem-fraction-static", "--chunked-prefill-size", "--max-running-requests")


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _findings(s: LogSummary) -> list[Finding]:
    out: list[Finding] = []
    b = s.last
    if s.spec.collapsed:
        out.append(Finding("spec_collapsed", "accept length sits at 1.00 over the last decode batches: "
                                             "every draft token is rejected"))
    c = s.concurrency()
    if b.capped is not None:
        msg = f"max_running_requests capped to {c['effective']} by the mamba state cache"
        if b.capped.max_mamba_cache_size is not None:
            msg += f" ({b.capped.max_mamba_cache_size} slots, {c['slots_per_request']} per request)"
        if c["requested"] is not None:
            msg += f"; requested {c['requested']}"
        out.append(Finding("concurrency_capped", msg))
    elif c["requested"] is not None and c["effective"] is not None and c["effective"] < c["requested"]:
        out.append(Finding("concurrency_capped", f"max_running_requests: requested {c['requested']}, "
                                                 f"SGLang runs {c['effective']}"))
    cap = s.capacity()
    if cap.verdict is not None and (cap.pool_slots is not None or cap.held is not None):
        msg = f"requests queue ({cap.queue} waiting at {cap.running} running): {cap.verdict}"
        idle = cap.idle_at_cap
        if cap.verdict == "admission cap" and idle is not None and idle >= 1 and cap.held and cap.reserved:
            msg += (f"; {idle:.0f} of {cap.pool_slots} Mamba slots idle at the cap (requests hold "
                    f"{cap.held.per_request:.1f}, the cap reserves {cap.reserved} per request)")
        else:
            msg += f" ({cap.verdict_reason})"
        out.append(Finding("queueing", msg))
    for f in b.deprecated_flags:
        out.append(Finding("flag_renamed", f"{f.old} is deprecated; use {f.new}" if f.new
                           else f"{f.old} is deprecated (SGLang names no replacement)"))
    # per-rank lines seen on some ranks but not others
    mem_ranks = [r for r in b.memory if r is not None]
    if len(mem_ranks) > 1 or len(s.ranks) > 1:
        ranks = [r for r in s.ranks]
        for label, attr in (("KV cache", "kv_cache"), ("Mamba cache", "mamba_total"),
                            ("weights", "weights"), ("memory pool end", "avail_after_pool")):
            have = [r for r in ranks if r in b.memory and getattr(b.memory[r], attr) is not None]
            if have:
                missing = [r for r in ranks if r not in have]
                if missing:
                    out.append(Finding("rank_missing_line",
                                       f"{label} line seen for {', '.join(have)} but not for {', '.join(missing)}"))
    for r in b.memory.values():
        if r.mamba_line_cut:
            out.append(Finding("line_cut", f"Mamba cache line of {r.rank or 'main'} is cut off; ignored"))
    if b.summary is not None and b.summary.context_len and b.summary.max_total_num_tokens \
            and b.summary.context_len > b.summary.max_total_num_tokens:
        out.append(Finding("context_exceeds_kv_pool",
                           f"context_len {b.summary.context_len} > KV pool {b.summary.max_total_num_tokens} tokens: "
                           "one full-length request cannot fit"))
    seen_settings = set()
    for st in b.settings:
        key = (st.setting, repr(st.value))
        if key in seen_settings:
            continue
        seen_settings.add(key)
        ranks = sorted({x.rank or "main" for x in b.settings if (x.setting, repr(x.value)) == key})
        out.append(Finding("setting_changed_by_sglang", f"{st.setting} = {st.value!r} (changed by SGLang; "
                                                        f"{', '.join(ranks)}): {st.message}"))
    f = s.failure
    if f is not None:
        if isinstance(f.event, E.Traceback) and not f.event.complete:
            out.append(Finding("traceback_cut", "the traceback is cut before its exception line: cause not shown"))
        if isinstance(f.event, E.Traceback) and f.event.oom:
            why = {
                # case-19: no cache pool was allocated yet: the weights (or their on-the-fly
                # quantisation) do not fit; the cache knobs size pools that never came
                "load": "; before any KV or Mamba cache pool: --mem-fraction-static and the Mamba cache flags "
                        "cannot fix it (more GPUs with --tp, or a smaller or pre-quantised checkpoint)",
                # after the weights: the pools and the graphs are sized by flags
                "startup": "; after the weights, while the KV and Mamba cache pools or the CUDA graphs took "
                           "memory: " + _and(usable(list(_POOL_FLAGS), s.version)) + " size them",
                # while serving: the static pools left too little for a batch's activations
                "runtime": "; while serving, after the pools and graphs were allocated: a batch's activations did "
                           "not fit in what the static pools left; " + _and(usable(list(_SERVING_FLAGS), s.version))
                           + " lower that need or leave more room",
            }.get(f.phase or "", "")
            out.append(Finding("oom", f"out of memory ({f.event.oom}) in phase {f.phase or 'unknown'}{why}"))
    if b.http_up and not b.ready and f is not None and f.phase == "startup":
        out.append(Finding("warmup_failed", "HTTP came up but the warm-up failed; the server never became ready"))
    if b.request_errors:
        last = b.request_errors[-1]
        what = f"{last.exc_type}: {last.exc_message}" if last.exc_type else "a traceback cut before its exception line"
        if last.origin:
            what = f"{last.origin}: {what}"
        n = len(b.request_errors)
        out.append(Finding("request_error", (f"{n} request errors" if n > 1 else "a request error")
                           + f" while serving, the server went on (last: {what})"))
    if s.n_boots > 1:
        out.append(Finding("several_boots", f"{s.n_boots} server starts in this log; fields describe the last"))
    return out
