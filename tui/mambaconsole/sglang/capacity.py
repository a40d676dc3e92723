"""Mamba slot capacity: how many state slots a request holds against what the admission cap
reserves, which limit makes requests queue, and what another ``--max-mamba-cache-size`` buys.

Pure arithmetic on numbers the console already has (no I/O): the Mamba pool size, the
effective ``max_running_requests``, SGLang's stated slots per request, recent decode lines,
and the startup sizes of the Mamba and KV pools.

**Slots reserved per request** (SGLang's "mamba ratio"): SGLang caps
``max_running_requests`` at ``max_mamba_cache_size // ratio``. Where the value comes from, in
order of preference (:attr:`Capacity.reserved_source`):

1. ``"sglang"``: SGLang said it, ``max_running_requests is capped to N by the mamba state
   cache (max_mamba_cache_size=N, R state slots per request)`` (0.5.18+,
   ``srt/mem_cache/kv_cache_configurator.py:KVCacheConfigurator.resolve_max_num_reqs``).
2. ``"rule"``: SGLang's rule applied to the resolved ServerArgs (:func:`slots_per_request_rule`).
   Read in SGLang 0.5.11 ``srt/model_executor/model_runner_kv_cache_mixin.py:
   ModelRunnerKVCacheMixin._calculate_mamba_ratio`` (constants
   ``MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO = 3``, ``..._ADDITIONAL_RATIO_OVERLAP = 2``,
   ``..._NO_OVERLAP = 1``) and 0.5.23 ``srt/mem_cache/kv_cache_configurator.py:
   KVCacheConfigurator._calculate_mamba_ratio`` with ``srt/mem_cache/allocation_sizing.py:
   get_mamba_tracking_slots``: 1 with the radix cache disabled; else 3, plus for
   ``extra_buffer`` 2 tracking slots with the overlap scheduler and 1 without, plus 1 for
   ``extra_buffer_lazy`` (0.5.13+). 0.5.23's ``SGLANG_OPT_MAMBA_SKIP_DECODE_LOCK`` drops the
   base to 2 and gives ``no_buffer`` the 1 back. Speculative settings enter through the overlap
   scheduler: SGLang disables it for speculative decoding without ``SGLANG_ENABLE_SPEC_V2``
   or with ``--speculative-eagle-topk`` > 1 (0.5.11 ``server_args.py``), so read
   ``disable_overlap_schedule`` *after* resolution.
3. ``"inferred"``: the unique whole R with ``pool // R == cap`` (R in (pool/(cap+1),
   pool/cap]) when the cap is below the requested count (so the Mamba pool set it).

**Slots held per running request** (:func:`held_per_request`): over the last
:data:`HELD_WINDOW` decode lines with ``#running-req`` ≥ 1, total slots in use / total running.
A line's slots in use is ``mamba num`` when printed (exact), else ``mamba usage`` × pool.
SGLang prints usage with two decimals and the published case-15 table shows it off by up to
:data:`USAGE_TOLERANCE` (0.59 for 24/40), so: while pool × 0.01 < 0.5 slot (pools up to 49
slots) usage × pool is rounded to the whole slot count, which is then exact; above that it is
kept as is and :attr:`HeldSlots.tolerance` bounds the error (0.01 × pool per line, summed,
over total running).

**Bottleneck verdict** while the last decode line shows ``#queue-req`` > 0
(:func:`verdict`), first match wins:

- ``"mamba pool full"``: free slots (pool − in use) < one request's held slots (at least 1;
  reserved when held is unknown; without a pool size: usage ≥ :data:`MAMBA_FULL_USAGE`);
- ``"KV pool full"``: (full) token usage ≥ :data:`KV_FULL_USAGE` (0.90; SGLang also reserves
  future decode tokens of running requests at admission, so the KV pool refuses new requests
  before usage reaches 1);
- ``"admission cap"``: ``#running-req`` ≥ the effective ``max_running_requests`` with room
  in both pools: raising the cap (or a pool sized to what requests really hold) would admit more;
- None otherwise (a queue below the cap with room in both pools: admission between batches).

**Units**: "GB" is SGLang's GB, bytes / 1024³ (``GB = 1024 * 1024 * 1024``,
``srt/mem_cache/memory_pool.py`` 0.5.23, the unit of ``Mamba Cache is allocated`` and
``KV Cache is allocated``); slots and tokens are counts; KV cost is bytes per token.
Per-slot cost = (conv + ssm state GB) / slots: the speculative intermediate caches are left
out (they scale with the request cap, not the slot count), and SGLang's one padding slot is
ignored (≤ 1/pool). A what-if assumes the freed memory goes to the KV pool, at the same
bytes per token (SGLang gives the KV pool what the Mamba pool leaves of the static budget).
"""

from __future__ import annotations

import math

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "GB_BYTES", "USAGE_TOLERANCE", "HELD_WINDOW", "KV_FULL_USAGE", "MAMBA_FULL_USAGE",
    "Sample", "HeldSlots", "WhatIf", "Capacity",
    "slots_per_request_rule", "slots_per_request_from_args", "infer_slots_per_request",
    "held_per_request", "verdict", "capacity",
]

#: bytes in SGLang's "GB" (srt/mem_cache/memory_pool.py: GB = 1024 * 1024 * 1024)
GB_BYTES = 1024 ** 3
#: how far a printed ``mamba usage`` may be off (two decimals, and seen 0.01 off: case-15)
USAGE_TOLERANCE = 0.01
#: decode lines the held-slots estimate uses (the most recent ones)
HELD_WINDOW = 16
#: (full) token usage from which the KV pool counts as full for the verdict
KV_FULL_USAGE = 0.90
#: mamba usage from which the Mamba pool counts as full when the pool size is unknown
MAMBA_FULL_USAGE = 0.95

VERDICTS = ("admission cap", "mamba pool full", "KV pool full")


@dataclass(frozen=True)
class Sample:
    """One decode line's load: ``#running-req``, ``#queue-req``, ``mamba usage`` (0..1),
    ``mamba num`` (slots in use) and (full) ``token usage`` (0..1); None where not printed."""

    running: int | None
    queue: int | None = None
    mamba_usage: float | None = None
    mamba_num: int | None = None
    token_usage: float | None = None

    @classmethod
    def of(cls, batch: Any) -> Sample:
        """From a :class:`mambaconsole.sglang.events.DecodeBatch`."""
        return cls(running=batch.running, queue=batch.queue, mamba_usage=batch.mamba_usage,
                   mamba_num=batch.mamba_num, token_usage=batch.token_usage)

    def slots_in_use(self, pool: int | None) -> tuple[float, float] | None:
        """(slots in use, ± error): ``mamba num`` exactly, else usage × pool (rounded to a
        whole slot, error 0, when pool × USAGE_TOLERANCE < 0.5). None when unknown."""
        if self.mamba_num is not None:
            return float(self.mamba_num), 0.0
        if self.mamba_usage is None or not pool:
            return None
        raw = self.mamba_usage * pool
        if pool * USAGE_TOLERANCE < 0.5:
            return float(round(raw)), 0.0
        return raw, USAGE_TOLERANCE * pool


def pool_from_usage(samples: Iterable[Sample]) -> int | None:
    """The Mamba pool size (slots) that decode lines' ``mamba num`` / ``mamba usage`` pairs
    determine: SGLang prints ``mamba usage`` as slots in use / pool size with two decimals
    (``scheduler_metrics_mixin.py`` ``f"{mamba_usage:.2f}"``, 0.5.18+ where ``mamba num``
    is printed too), so each pair with ``mamba num`` > 0 allows the whole N for which
    ``f"{num / N:.2f}"`` prints that usage. The one N every pair allows, else None (no pair,
    or several sizes fit: the lines do not determine it)."""
    samples = list(samples)
    lo, hi = 1, None
    seen = False
    for s in samples:
        n, u = s.mamba_num, s.mamba_usage
        if not n or u is None or u <= 0.005:
            continue
        seen = True
        lo = max(lo, n, math.ceil(n / (u + 0.006)))
        top = math.floor(n / (u - 0.006))
        hi = top if hi is None else min(hi, top)
    if not seen or hi is None:
        return None
    pairs = [(s.mamba_num, f"{s.mamba_usage:.2f}") for s in samples
             if s.mamba_num and s.mamba_usage is not None and s.mamba_usage > 0.005]
    fits = [k for k in range(lo, hi + 1) if all(f"{n / k:.2f}" == u for n, u in pairs)] if hi - lo < 10000 else []
    return fits[0] if len(fits) == 1 else None


def slots_per_request_rule(strategy: str | None, *, disable_radix_cache: bool = False,
                           overlap: bool = True, skip_decode_lock: bool = False) -> int | None:
    """SGLang's slots reserved per request for a resolved Mamba strategy (see the module
    docstring for the sources). ``strategy``: ``no_buffer``, ``extra_buffer``,
    ``extra_buffer_lazy``; ``overlap``: the overlap scheduler is on (``not
    disable_overlap_schedule`` after resolution). None for an unresolved strategy (``auto``,
    None) with the radix cache on, or an unknown one."""
    if disable_radix_cache:
        return 1
    base = 2 if skip_decode_lock else 3
    if strategy == "no_buffer":
        return base + (1 if skip_decode_lock else 0)
    if strategy == "extra_buffer":
        return base + (2 if overlap else 1)
    if strategy == "extra_buffer_lazy":
        return base + 1
    return None


def slots_per_request_from_args(args: Mapping[str, Any] | None) -> int | None:
    """:func:`slots_per_request_rule` on resolved ServerArgs fields: ``disable_radix_cache``,
    ``mamba_radix_cache_strategy`` (0.5.14+) or ``mamba_scheduler_strategy`` (0.5.9-0.5.13),
    ``disable_overlap_schedule``. None when the strategy is not resolved there."""
    if not args:
        return None
    strategy = args.get("mamba_radix_cache_strategy")
    if strategy in (None, "auto"):
        strategy = args.get("mamba_scheduler_strategy", strategy)
    return slots_per_request_rule(strategy if isinstance(strategy, str) else None,
                                  disable_radix_cache=args.get("disable_radix_cache") is True,
                                  overlap=args.get("disable_overlap_schedule") is not True)


def infer_slots_per_request(pool: int | None, cap: int | None) -> int | None:
    """The whole R with ``pool // R == cap`` when there is exactly one, else None."""
    if not pool or not cap or cap <= 0:
        return None
    hits = [r for r in range(1, pool // cap + 1) if pool // r == cap]
    return hits[0] if len(hits) == 1 else None


@dataclass(frozen=True)
class HeldSlots:
    """Slots held per running request: ``per_request`` ± ``tolerance`` over ``lines`` decode
    lines (``exact``: every line gave a whole slot count)."""

    per_request: float
    tolerance: float
    lines: int

    @property
    def exact(self) -> bool:
        return self.tolerance == 0.0

    def text(self) -> str:
        """``4.0`` or ``4.0±0.3``: the slots held per request with one decimal, its spread
        when that shows at one decimal (0.05 and up)."""
        tol = f"±{self.tolerance:.1f}" if self.tolerance >= 0.05 else ""
        return f"{self.per_request:.1f}{tol}"


def held_per_request(samples: Iterable[Sample], pool: int | None, window: int = HELD_WINDOW) -> HeldSlots | None:
    """Total slots in use / total running over the last ``window`` samples with running ≥ 1
    and a Mamba figure. None when there is none."""
    used = err = 0.0
    running = lines = 0
    for s in reversed(list(samples)):
        if lines >= window:
            break
        if not s.running or s.running < 1:
            continue
        got = s.slots_in_use(pool)
        if got is None:
            continue
        used += got[0]
        err += got[1]
        running += s.running
        lines += 1
    if not lines:
        return None
    return HeldSlots(per_request=used / running, tolerance=err / running, lines=lines)


def verdict(last: Sample | None, *, pool: int | None, cap: int | None, held: float | None,
            reserved: int | None) -> tuple[str | None, str]:
    """(verdict, reason) for the last decode line: one of :data:`VERDICTS`, or None with
    the reason (nothing queues, or why no limit applies). Rules in the module docstring."""
    if last is None or last.running is None:
        return None, "no decode line"
    if not last.queue:
        return None, "nothing queues"
    inuse = last.slots_in_use(pool)
    need = max(held or reserved or 1, 1)
    if pool and inuse is not None:
        free = pool - inuse[0]
        if free < need:
            return "mamba pool full", f"{free:g} of {pool} slots free, a request holds {need:g}"
    elif last.mamba_usage is not None and last.mamba_usage >= MAMBA_FULL_USAGE:
        return "mamba pool full", f"mamba usage {last.mamba_usage:.2f}"
    if last.token_usage is not None and last.token_usage >= KV_FULL_USAGE:
        return "KV pool full", f"token usage {last.token_usage:.2f}"
    if cap and last.running >= cap:
        return "admission cap", f"{last.running} running = max_running_requests {cap}, room in both pools"
    return None, "queue below the cap with room in both pools"


@dataclass(frozen=True)
class WhatIf:
    """``--max-mamba-cache-size pool_slots``: ``concurrency`` (max_running_requests SGLang
    would run), ``freed_gb`` (SGLang GB; negative = the pool grows), ``extra_kv_tokens`` and
    ``kv_growth`` (fraction of today's KV pool); None where the sizes are not known."""

    pool_slots: int
    concurrency: int | None
    freed_gb: float | None
    extra_kv_tokens: int | None
    kv_growth: float | None

    def as_json(self) -> dict[str, Any]:
        return {"pool_slots": self.pool_slots, "concurrency": self.concurrency, "freed_gb": self.freed_gb,
                "extra_kv_tokens": self.extra_kv_tokens, "kv_growth": self.kv_growth}


@dataclass(frozen=True)
class Capacity:
    """The Mamba slot picture of one run (field meanings and units in the module docstring).

    ``idle_at_cap``: slots left unused with ``cap`` requests holding ``held`` each (pool −
    cap × held); ``used_at_cap``: that use as a fraction of the pool; ``peak_running``: the
    most ``#running-req`` among the samples."""

    pool_slots: int | None
    cap: int | None
    requested: int | None
    reserved: int | None
    reserved_source: str | None
    held: HeldSlots | None
    running: int | None
    queue: int | None
    peak_running: int | None
    verdict: str | None
    verdict_reason: str
    per_slot_gb: float | None
    kv_bytes_per_token: float | None
    kv_tokens: int | None

    @property
    def idle_at_cap(self) -> float | None:
        if self.pool_slots is None or self.cap is None or self.held is None:
            return None
        return self.pool_slots - self.cap * self.held.per_request

    @property
    def used_at_cap(self) -> float | None:
        if not self.pool_slots or self.cap is None or self.held is None:
            return None
        return self.cap * self.held.per_request / self.pool_slots

    def what_if(self, pool_slots: int) -> WhatIf:
        """What ``--max-mamba-cache-size pool_slots`` gives: concurrency min(requested,
        pool_slots // reserved) (the requested count, or today's cap when the Mamba pool did
        not set it, bounds it), the memory freed and the KV tokens it buys."""
        conc = None
        if self.reserved:
            conc = pool_slots // self.reserved
            limit = self.requested
            if limit is None and self.cap is not None and self.pool_slots is not None \
                    and self.cap < self.pool_slots // self.reserved:
                limit = self.cap  # today's cap came from elsewhere (KV estimate): it stays
            if limit is not None:
                conc = min(conc, limit)
        freed = extra = growth = None
        if self.per_slot_gb is not None and self.pool_slots is not None:
            freed = (self.pool_slots - pool_slots) * self.per_slot_gb
            if self.kv_bytes_per_token:
                extra = int(freed * GB_BYTES / self.kv_bytes_per_token)
                if self.kv_tokens:
                    growth = extra / self.kv_tokens
        return WhatIf(pool_slots=pool_slots, concurrency=conc, freed_gb=freed, extra_kv_tokens=extra,
                      kv_growth=growth)

    def fit_to_peak(self) -> int | None:
        """The pool that still admits the peak running count seen: peak × reserved; None
        when not smaller than today's pool or not known."""
        if not self.peak_running or not self.reserved or not self.pool_slots:
            return None
        n = self.peak_running * self.reserved
        return n if n < self.pool_slots else None

    def line(self) -> str:
        """One short line (it fits the console's speculative pane at 120x40): ``held 4.0/req ·
        reserved 5/req · cap 8: 8/40 idle`` (8 of the 40 slots idle with 8 requests running),
        known parts only; "" when nothing is known."""
        parts = []
        if self.held is not None:
            parts.append(f"held {self.held.text()}/req")
        if self.reserved is not None:
            parts.append(f"reserved {self.reserved}/req")
        idle = self.idle_at_cap
        if idle is not None:
            parts.append(f"cap {self.cap}: {max(idle, 0):.0f}/{self.pool_slots} idle")
        elif self.pool_slots is not None:
            parts.append(f"pool {self.pool_slots}")
        return " · ".join(parts)

    def as_json(self) -> dict[str, Any]:
        """The ``inspect --json`` ``capacity`` object (keys documented in commands/inspect.py)."""
        h = self.held
        fit = self.fit_to_peak()
        return {
            "summary": self.line(), "pool_slots": self.pool_slots, "cap": self.cap, "requested": self.requested,
            "reserved_per_request": self.reserved, "reserved_source": self.reserved_source,
            "held_per_request": round(h.per_request, 4) if h else None,
            "held_tolerance": round(h.tolerance, 4) if h else None, "held_lines": h.lines if h else 0,
            "idle_at_cap": None if self.idle_at_cap is None else round(self.idle_at_cap, 4),
            "used_at_cap": None if self.used_at_cap is None else round(self.used_at_cap, 4),
            "running": self.running, "queue": self.queue, "peak_running": self.peak_running,
            "verdict": self.verdict, "verdict_reason": self.verdict_reason,
            "per_slot_gb": self.per_slot_gb, "kv_bytes_per_token": self.kv_bytes_per_token,
            "kv_tokens": self.kv_tokens,
            "what_if_fit_peak": self.what_if(fit).as_json() if fit is not None else None,
        }


def capacity(*, pool_slots: int | None, cap: int | None, requested: int | None = None,
             stated_slots_per_request: int | None = None, args: Mapping[str, Any] | None = None,
             samples: Iterable[Sample] = (), mamba_state_gb: float | None = None,
             kv_gb: float | None = None, kv_tokens: int | None = None,
             peak_running: int | None = None) -> Capacity:
    """The :class:`Capacity` of a run from what the console knows.

    ``pool_slots``: ``max_mamba_cache_size`` (Mamba pool slots); ``cap``: the effective
    ``max_running_requests``; ``requested``: the configured one (None = SGLang's default);
    ``stated_slots_per_request``: SGLang's own figure (the cap warning); ``args``: resolved
    ServerArgs fields for :func:`slots_per_request_from_args`; ``samples``: decode lines,
    oldest first; ``mamba_state_gb``: conv + ssm state GB; ``kv_gb``/``kv_tokens``: the KV
    pool's GB and ``#tokens``; ``peak_running``: the most running over lines no longer in
    ``samples`` (a bounded window). When ``cap`` is None and the reservation and pool are known,
    it is min(requested, pool // reserved)."""
    samples = list(samples)
    reserved, source = None, None
    if stated_slots_per_request:
        reserved, source = stated_slots_per_request, "sglang"
    else:
        r = slots_per_request_from_args(args)
        if r is not None:
            reserved, source = r, "rule"
        elif cap is not None and (requested is None or cap < requested):
            r = infer_slots_per_request(pool_slots, cap)
            if r is not None:
                reserved, source = r, "inferred"
    if cap is None and reserved and pool_slots:
        cap = pool_slots // reserved if requested is None else min(requested, pool_slots // reserved)
    held = held_per_request(samples, pool_slots)
    last = samples[-1] if samples else None
    v, why = verdict(last, pool=pool_slots, cap=cap, held=held.per_request if held else None, reserved=reserved)
    per_slot = mamba_state_gb / pool_slots if mamba_state_gb and pool_slots else None
    bpt = kv_gb * GB_BYTES / kv_tokens if kv_gb and kv_tokens else None
    peaks = [s.running for s in samples if s.running is not None] + ([peak_running] if peak_running is not None else [])
    return Capacity(pool_slots=pool_slots, cap=cap, requested=requested, reserved=reserved, reserved_source=source,
                    held=held, running=last.running if last else None, queue=last.queue if last else None,
                    peak_running=max(peaks) if peaks else None, verdict=v, verdict_reason=why,
                    per_slot_gb=per_slot, kv_bytes_per_token=bpt, kv_tokens=kv_tokens)
