"""Pure knowledge of SGLang (no I/O, no Textual): every format tagged with the SGLang versions
that print it (shared/reference/sglang-observables.md).

Modules and their main entry points:

- :mod:`.events`   log lines → typed events: :class:`~.events.LogParser` (``feed(line)``,
  ``flush()``; joins tracebacks and wrapped lines), :func:`~.events.parse_line`,
  :func:`~.events.parse_text`; event classes (DecodeBatch, PrefillBatch, WeightsLoaded,
  KVCacheAllocated, MambaCacheAllocated, MemoryPoolEnd, GraphCaptureBegin/End, ReadySummary,
  ConcurrencyCapped, ServerReady, ServerArgsDump, Traceback, ...).
- :mod:`.text`     :func:`~.text.display_text`: a log line with ANSI/control sequences removed.
- :mod:`.spec`     accept len / accept rate semantics per version, collapse, "off".
- :mod:`.metrics`  ``/metrics`` → :class:`~.metrics.MetricsSnapshot` (prometheus_client parser).
- :mod:`.server_info`  ``/server_info`` JSON → :class:`~.server_info.ServerInfo`.
- :mod:`.gpu`      nvidia-smi CSV / table and gpustat → :class:`~.gpu.Gpu` list.
- :mod:`.summary`  events → :class:`~.summary.LogSummary` (boots, per-rank memory budget,
  concurrency, outcome, findings).
- :mod:`.argv`     launch command model: :class:`~.argv.LaunchCommand` (parse/set/render),
  :class:`~.argv.ParserSpec` (the node's parser), renamed/unknown flags.
- :mod:`.inspect`  :func:`~.inspect.inspect_text`: the ``mambaconsole inspect --json`` object.
- :mod:`.versions` version strings.
"""
