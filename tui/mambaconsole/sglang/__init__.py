"""Pure knowledge of SGLang (no I/O, no Textual): every format tagged with the SGLang versions
that print it (shared/reference/sglang-observables.md).

Modules:
- :mod:`.events`  log lines → typed events (:class:`~.events.LogParser`, :func:`~.events.parse_line`)
- :mod:`.text`    display-safe text of a log line (:func:`~.text.display_text`)
"""
