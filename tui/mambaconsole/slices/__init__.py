"""The slices of :class:`mambaconsole.state.ConsoleState`, one per data source.

Each slice is a small class that owns the fields one source of events writes and the handlers
for those events (``on_<event>(ev) -> set[str]``: the panes whose data changed). Its public
fields and methods are the selectors the panes read; what starts with ``_`` is the slice's own.
``ConsoleState`` holds one of each (``state.slices``), maps every event type to its slice's
handler in one explicit table (:data:`mambaconsole.state.SLICES`) and forwards the fields the
panes have always read (``state.gpu`` is ``state.slices.gpu.snapshot``).

No Textual and no I/O here; times are Unix seconds on the console's clock (``clock()``).
"""
