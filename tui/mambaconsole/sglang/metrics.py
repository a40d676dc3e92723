"""SGLang's Prometheus ``/metrics`` text → a typed snapshot.

Parsing is done by ``prometheus_client.parser.text_string_to_metric_families``; this module
only removes lines that are not exposition format (a pasted ``curl`` command, a cut last
line) and picks the series the console shows. Metric names and their versions are from
``srt/metrics/collector.py`` (0.5.5–0.5.9) and ``srt/observability/metrics_collector.py``
(0.5.10+), see the reference §5.5.

Absent, NaN and disabled stay distinguishable: a metric the server does not export is
``None`` in the snapshot and listed nowhere; a NaN value is ``None`` and listed in
:attr:`MetricsSnapshot.nan` ("no data"); HTTP 404 on ``/metrics`` is
:meth:`MetricsSnapshot.disabled` (server started without ``--enable-metrics``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

__all__ = ["MetricsSnapshot", "parse_metrics", "looks_like_metrics", "GAUGES"]

#: snapshot attribute → (metric name, first version that exports it)
GAUGES: dict[str, tuple[str, str]] = {
    "num_running_reqs": ("sglang:num_running_reqs", "all"),
    "num_queue_reqs": ("sglang:num_queue_reqs", "all"),
    "num_used_tokens": ("sglang:num_used_tokens", "all"),
    "token_usage": ("sglang:token_usage", "all"),
    "full_token_usage": ("sglang:full_token_usage", "0.5.10+"),
    "swa_token_usage": ("sglang:swa_token_usage", "all"),
    "mamba_usage": ("sglang:mamba_usage", "all"),
    "mamba_used_tokens": ("sglang:mamba_used_tokens", "0.5.12+"),
    "mamba_available_tokens": ("sglang:mamba_available_tokens", "0.5.12+"),
    "mamba_evictable_tokens": ("sglang:mamba_evictable_tokens", "0.5.12+"),
    "kv_used_tokens": ("sglang:kv_used_tokens", "0.5.11+"),
    "kv_available_tokens": ("sglang:kv_available_tokens", "0.5.11+"),
    "kv_evictable_tokens": ("sglang:kv_evictable_tokens", "0.5.11+"),
    "max_total_num_tokens": ("sglang:max_total_num_tokens", "0.5.9+"),
    "gen_throughput": ("sglang:gen_throughput", "all"),
    "cache_hit_rate": ("sglang:cache_hit_rate", "all"),
    "spec_accept_length": ("sglang:spec_accept_length", "all"),
    "spec_accept_rate": ("sglang:spec_accept_rate", "all (meaning changed in 0.5.11)"),
    "spec_num_steps": ("sglang:spec_num_steps", "0.5.13+"),
    "spec_num_draft_tokens": ("sglang:spec_num_draft_tokens", "0.5.13+"),
    "utilization": ("sglang:utilization", "all"),
    "is_cuda_graph": ("sglang:is_cuda_graph", "all"),
    "startup_available_gpu_memory_gb": ("sglang:startup_available_gpu_memory_gb", "0.5.11+"),
    "weight_memory_usage_gb": ("sglang:weight_memory_usage_gb", "0.5.18+"),
    "kv_cache_memory_usage_gb": ("sglang:kv_cache_memory_usage_gb", "0.5.18+"),
}

#: counters the console shows as the server's own totals since it started (0.5.x
#: ``srt/metrics/collector.py`` TokenizerMetricsCollector; one series per ``is_streaming``)
COUNTERS = {
    "requests": "sglang:num_requests_total",
    "prompt_tokens": "sglang:prompt_tokens_total",
    "generation_tokens": "sglang:generation_tokens_total",
}

_SAMPLE_RE = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*(\{.*\})?\s+[-+0-9.eEinfINFaN]+(\s+-?\d+)?\s*$")


@dataclass(frozen=True)
class MetricsSnapshot:
    """One ``/metrics`` scrape.

    ``samples``: sample name → list of (labels, value) as parsed (NaN kept as NaN there).
    ``types``: family name → Prometheus type. ``label_names``: every label name seen.
    Typed gauges (``token_usage`` … ``kv_cache_memory_usage_gb``, see :data:`GAUGES`) are
    the value of the series of attention-TP rank 0 (``tp_rank="0"``, total of priority
    classes) or the only series; None when not exported or NaN. Units: usage 0..1, tokens,
    tokens/s, GB (SGLang's GB). ``graph_memory_usage_gb``: sum over ``phase`` (0.5.18+).
    """

    enabled: bool = True
    samples: dict[str, list[tuple[dict[str, str], float]]] = field(default_factory=dict)
    types: dict[str, str] = field(default_factory=dict)
    label_names: tuple[str, ...] = ()
    nan: tuple[str, ...] = ()
    dropped_lines: int = 0

    @classmethod
    def disabled(cls) -> "MetricsSnapshot":
        """``/metrics`` answered 404: the server runs without ``--enable-metrics``."""
        return cls(enabled=False)

    def has(self, name: str) -> bool:
        return name in self.samples

    def value(self, name: str) -> float | None:
        """The rank-0 value of a metric by its full name; None when absent, NaN or infinite."""
        rows = self.samples.get(name)
        if not rows:
            return None
        pick = None
        for labels, v in rows:
            if labels.get("tp_rank", "0") == "0" and not labels.get("priority"):
                pick = v
                break
        if pick is None:
            pick = rows[0][1]
        if pick is None or (isinstance(pick, float) and not math.isfinite(pick)):
            return None  # NaN: no data; +-inf (a sample like 1e400): no usable value either
        return pick

    def total(self, name: str) -> float | None:
        """A counter's value summed over all its series (``is_streaming`` true and false, DP
        ranks, ...): the server's own total since it started; None when absent or not finite."""
        vals = [v for _labels, v in self.samples.get(name) or () if isinstance(v, float) and math.isfinite(v)]
        return sum(vals) if vals else None

    def __getattr__(self, attr: str) -> Any:
        spec = GAUGES.get(attr)
        if spec is None:
            raise AttributeError(attr)
        return self.value(spec[0])

    @property
    def graph_memory_usage_gb(self) -> float | None:
        rows = self.samples.get("sglang:graph_memory_usage_gb")
        if not rows:
            return None
        vals = [v for labels, v in rows if labels.get("tp_rank", "0") == "0" and math.isfinite(v)]
        return round(sum(vals), 6) if vals else None

    @property
    def spec_exported(self) -> bool:
        return "sglang:spec_accept_length" in self.samples

    def as_json(self) -> dict[str, Any]:
        """Typed values for ``inspect --json``: every gauge of :data:`GAUGES` that the
        server exports (None = exported but NaN, "no data"), plus ``enabled``,
        ``label_names`` and ``graph_memory_usage_gb``."""
        out: dict[str, Any] = {"enabled": self.enabled, "label_names": list(self.label_names)}
        for attr, (name, _) in GAUGES.items():
            if name in self.samples:
                out[attr] = self.value(name)
        if "sglang:graph_memory_usage_gb" in self.samples:
            out["graph_memory_usage_gb"] = self.graph_memory_usage_gb
        return out


def looks_like_metrics(text: str) -> bool:
    """True when the text holds Prometheus exposition lines of SGLang (``sglang:``)."""
    return "# TYPE sglang:" in text or "# HELP sglang:" in text or re.search(r"^sglang:\w+[{ ]", text, re.M) is not None


def _clean(text: str) -> tuple[str, int]:
    kept: list[str] = []
    dropped = 0
    for line in text.splitlines():
        s = line.strip()
        if not s:
            continue
        if s.startswith("#"):
            parts = s.split(None, 3)
            if len(parts) >= 3 and parts[1] in ("HELP", "TYPE"):
                if parts[1] == "TYPE" and (len(parts) < 4 or parts[3] not in (
                        "counter", "gauge", "histogram", "summary", "untyped", "unknown", "info", "stateset", "gaugehistogram")):
                    dropped += 1
                    continue
                kept.append(s)
            else:
                kept.append(s)
            continue
        if _SAMPLE_RE.match(s):
            kept.append(s)
        else:
            dropped += 1
    return "\n".join(kept) + "\n", dropped


def parse_metrics(text: str | bytes) -> MetricsSnapshot:
    """Parse a ``/metrics`` body (or a paste of one). Lines that are not exposition format
    are dropped and counted in ``dropped_lines``; never raises on bad input."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    body, dropped = _clean(text)
    samples: dict[str, list[tuple[dict[str, str], float]]] = {}
    types: dict[str, str] = {}
    labels_seen: dict[str, None] = {}

    def take(families) -> None:
        for fam in families:
            types.setdefault(fam.name, fam.type)
            for s in fam.samples:
                samples.setdefault(s.name, []).append((dict(s.labels), float(s.value)))
                for k in s.labels:
                    labels_seen.setdefault(k, None)

    try:
        take(list(text_string_to_metric_families(body)))
    except Exception:
        # one bad sample must not lose the others: parse line by line under the last TYPE
        samples.clear()
        last_type = ""
        for line in body.splitlines():
            if line.startswith("# TYPE"):
                last_type = line
                continue
            if line.startswith("#"):
                continue
            try:
                take(list(text_string_to_metric_families((last_type + "\n" if last_type else "") + line + "\n")))
            except Exception:
                dropped += 1
    nan = tuple(sorted(n for n, rows in samples.items() if any(math.isnan(v) for _, v in rows)))
    return MetricsSnapshot(enabled=True, samples=samples, types=types,
                           label_names=tuple(labels_seen), nan=nan, dropped_lines=dropped)
