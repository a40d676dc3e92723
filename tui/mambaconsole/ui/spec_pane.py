"""Speculative decoding pane: accept length and accept rate over time (sparklines), current
and mean, throughput, the collapse alarm, and "speculation off" when the run has none. While
a run serves: running / queued (with why requests queue), the pools' usage, and the Mamba
slots a request holds against what the cap reserves (:mod:`mambaconsole.sglang.capacity`).

Accept rate is shown as SGLang printed it; its meaning changed in 0.5.11 (drafts only, bonus
token excluded; 0.5.9-0.5.10 include the bonus token): the pane says which."""

from __future__ import annotations

import time

from rich.cells import cell_len
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Sparkline, Static

from mambaconsole.sglang.capacity import Capacity, Sample, capacity
from mambaconsole.sglang.spec import DRAFTS_ONLY, WITH_BONUS, accept_rate_meaning
from mambaconsole.state import ConsoleState, fmt_duration
from mambaconsole.ui.redraw import set_if_changed, steady_height, update_static
from mambaconsole.units import count


def _int(v) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def capacity_of(state: ConsoleState) -> Capacity | None:
    """The run's Mamba slot capacity from what the console holds: the recent decode lines, the
    pool size (the ``Mamba Cache is allocated`` line, else the live or resolved
    ``max_mamba_cache_size``), the effective ``max_running_requests`` the live server reports
    (log caps, ``/server_info``), the requested one (the resolution, else the log's dump),
    SGLang's stated slots per request, and the live ServerArgs over the resolved ones for
    SGLang's rule. None for a model without Mamba state (no pool size, no ``mamba usage``)."""
    samples = [Sample.of(b) for b in state.recent_batches]
    live = {k: v for k, (v, _) in state.live_values().items()}
    resolved = {r.field: r.value for r in state.rows}
    args = {**resolved, **live}
    pool = state.mamba_pool_slots or _int(args.get("max_mamba_cache_size"))
    if pool is None and not any(x.mamba_usage is not None or x.mamba_num is not None for x in samples):
        return None
    requested = _int(resolved.get("max_running_requests", (state.dumped_args or {}).get("max_running_requests")))
    return capacity(pool_slots=pool, cap=_int(live.get("max_running_requests")), requested=requested,
                    stated_slots_per_request=state.mamba_slots_per_request, args=args, samples=samples)


def slots_text(cap: Capacity, width: int | None = None) -> str:
    """The Mamba slots a request holds against what the cap reserves, as a sentence:
    ``Mamba slots per request: 4.0 held, 5 reserved; cap 8 requests: 8 of 40 slots idle``
    (:class:`~mambaconsole.sglang.capacity.Capacity`: held is measured from the decode lines,
    ``±`` its spread; reserved is SGLang's stated or the pool / cap), known parts only; on two
    lines at the ``;`` where one is wider than ``width`` cells. "" when nothing is known."""
    per = []
    if cap.held is not None:
        per.append(f"{cap.held.text()} held")
    if cap.reserved is not None:
        per.append(f"{cap.reserved} reserved")
    clauses = [f"Mamba slots per request: {', '.join(per)}"] if per else []
    idle = cap.idle_at_cap
    if idle is not None:
        clauses.append(f"cap {count(cap.cap, 'request')}: {max(idle, 0):.0f} of {cap.pool_slots} slots idle")
    elif cap.pool_slots is not None:
        clauses.append(f"a pool of {cap.pool_slots} Mamba slots")
    one = "; ".join(clauses)
    if width is None or cell_len(one) <= width or len(clauses) < 2:
        return one
    return ";\n".join(clauses)


def load_text(state: ConsoleState, cap: Capacity | None = None, width: int | None = None) -> str:
    """``running N  queued N`` and, on a second line, ``<usage>``: the last decode batch line's numbers, each labelled with
    the field SGLang printed (``token usage`` of a plain pool; ``full token usage`` and
    ``mamba usage`` of a hybrid one: sglang.events.DecodeBatch); before any decode line, the
    ``/metrics`` gauges of the same names. "" when neither is known. With ``cap`` (a hybrid
    Mamba run): ``queued N (admission cap)`` names why requests queue, and :func:`slots_text`
    (fitted to ``width`` cells)."""
    b = state.last_batch
    if b is not None:
        vals = (("running", b.running), ("queued", b.queue),
                ("token usage", b.token_usage if b.full_token_usage is None else None),
                ("full token usage", b.full_token_usage), ("swa token usage", b.swa_token_usage),
                ("mamba usage", b.mamba_usage))
    else:
        m = state.metrics
        vals = (("running", m.get("sglang:num_running_reqs")), ("queued", m.get("sglang:num_queue_reqs")),
                ("full token usage", m.get("sglang:full_token_usage")), ("mamba usage", m.get("sglang:mamba_usage")))
        if vals[2][1] is None and vals[3][1] is None:
            vals += (("token usage", m.get("sglang:token_usage")),)
    reqs = "  ".join(f"{label} {v:g}" for label, v in vals if v is not None and label in ("running", "queued"))
    usage = "  ".join(f"{label} {v:.2f}" for label, v in vals if v is not None and label not in ("running", "queued"))
    slots = ""
    if cap is not None and b is not None:
        if reqs and cap.verdict:
            reqs += f" ({cap.verdict})"
        slots = slots_text(cap, width)
    return "\n".join(p for p in (reqs, usage, slots) if p)


def failure_text(state: ConsoleState, colors: dict[str, str]) -> Text:
    """What ended a run that never decoded, in full (the header's line is cut): the failure
    headline, for an OOM at a known allocation (:attr:`ConsoleState.oom_site`) what it is, where
    in SGLang, the flags that size it with their values, and PyTorch's numbers; else the
    exception line."""
    err = f"bold {colors.get('error', 'red')}"
    t = Text(no_wrap=False)
    t.append(f"the run ended before any decode batch: {state.status_label()}\n", "bold")
    site = state.oom_site
    if site is None:
        t.append(state.failure or "", err)
        return t
    n = state.oom_numbers
    t.append(f"OOM allocating {site.name}" + (f" ({n.tried_gib:.2f} GiB)" if n is not None else ""), err)
    plan = state.memory_plan  # the same run predicted from its arguments before the load (issue 18)
    if plan is not None:
        t.append("\npredicted before the load: ", "bold")
        t.append(plan["verdict"], err if not plan["fits"] else "")
        if plan.get("simulator_rule"):  # one line: the pane is short, the sizing flags follow
            t.append(" (by the simulator's sizing rule)", "dim")
    t.append(f"\n{site.what}\nin {site.where}\n", "dim")
    t.append("sized by:\n", "bold")
    vals = dict(state.flag_values(site.flags))
    for f in site.flags:
        t.append(f"  {f} ", "bold")
        if f not in vals:
            t.append("(resolving…)" if not state.rows else "(not in this SGLang)", "dim")
        else:
            v = vals[f]
            t.append("(not given)" if v is None else str(v), "dim" if v is None else "")
        t.append("\n")
    if n is not None:
        t.append(n.describe(), "dim")
    if plan is not None and plan.get("advice"):
        t.append("\nwhat fits, predicted:\n", "bold")
        for a in plan["advice"]:
            t.append("  " + " ".join(f"{k} {v}" for k, v in a["flags"].items())
                     + f" fits, {count(a['max_running_requests'], 'request')}\n", "dim")
    return t


def middle_text(state: ConsoleState) -> str:
    """The batches above are the log's boot and tail (its middle was not read): say so, and
    what the server's own counters say of the whole run (``/metrics``), when it exports them."""
    from mambaconsole.units import fmt_bytes

    a, b = state.log_skipped
    t = state.metric_totals
    parts = []
    if t.get("requests") is not None:
        parts.append(f"{t['requests']:,.0f} requests")
    if t.get("generation_tokens") is not None:
        parts.append(f"{t['generation_tokens']:,.0f} tokens generated")
    counters = f"; since start (/metrics): {', '.join(parts)}" if parts else "; no /metrics counters"
    return f"(batches of the log's head and tail: {fmt_bytes(b - a)} of its middle not read{counters})\n"


#: Textual's Sparkline draws the lowest value shown as its lowest bar and the highest as a full one
LOW_BAR, HIGH_BAR = "▁", "█"


def scale_label(name: str, values: list[float], fmt: str, span_s: float | None) -> str:
    """A sparkline's scale and span: ``accept length ▁2.72 █3.55 · 34 batches, 1 min 10 s``.
    The bars run from the lowest value shown (its lowest bar, ``▁``) to the highest (a full one,
    ``█``), not from 0: the two numbers beside their bars say so. ``fmt``: the values' format
    (``.2f``); ``span_s``: seconds from the first batch shown to the last (the lines' own
    timestamps; None: unknown)."""
    if not values:
        return name
    n = len(values)
    span = f", {fmt_duration(span_s)}" if span_s is not None and n > 1 else ""
    return (f"{name} {LOW_BAR}{min(values):{fmt}} {HIGH_BAR}{max(values):{fmt}}"
            f" · {n} batch{'' if n == 1 else 'es'}{span}")


def rate_meaning(version: str | None) -> str:
    """How the version's log defines accept rate (sglang-observables §2.4), for display."""
    m = accept_rate_meaning(version)
    return {DRAFTS_ONLY: "drafts only", WITH_BONUS: "incl. bonus token"}.get(m, "")


class BatchSparkline(Sparkline):
    """Textual's Sparkline, one column per value, left-aligned, until the values fill its
    width (then the last ones as Textual draws them, one bucket a column): the widget keeps
    its width, so a new batch while the chart fills repaints it without laying the screen out
    (a width set per batch did: a layout each decode batch for a run's first ~55 batches at
    120x40, up to 30 ms of the event loop each on this project's 2-core box)."""

    def render(self):
        bars = super().render()  # textual.renderables.sparkline.Sparkline: its width is the columns drawn
        if bars.width and self.data:
            bars.width = min(bars.width, len(self.data))
        return bars


class SpecPane(Vertical, can_focus=True):
    DEFAULT_CSS = """
    SpecPane #spec-stats { height: auto; }
    SpecPane Sparkline { height: 2; margin: 0 1; }
    SpecPane .spark-label { height: 1; color: $text-muted; }
    """

    def compose(self) -> ComposeResult:
        yield Static("", id="spec-stats")
        yield Static("accept length", classes="spark-label", id="len-label")
        yield BatchSparkline([], id="spark-len")
        yield Static("gen throughput (token/s)", classes="spark-label", id="thr-label")
        yield BatchSparkline([], id="spark-thr")

    def refresh_from(self, state: ConsoleState) -> None:
        """Live run: the numbers as current. A run that is over (dead, exited, OOM, crashed,
        stopped) or unreachable: the same numbers dimmed under ``last seen N s ago``, throughput
        as the last batch's, no running/queued (they are not current)."""
        self._state = state
        c = self.app.theme_variables
        stats = Text()
        live = state.live
        seen = state.batch_t if state.batch_t is not None else state.metrics_t
        spark_len = self.query_one("#spark-len", Sparkline)
        spark_thr = self.query_one("#spark-thr", Sparkline)
        # one column per batch: as many of the last batches as the columns hold (a sparkline
        # given fewer stretched 2 batches over the whole width, as two blocks)
        cols = max(1, self.content_size.width - spark_len.styles.margin.width) if self.content_size.width else 200
        pts = state.spec.tail(cols)  # the sparklines' points (SPEC_KEEP are kept)
        if not pts:  # shown again by _fit_charts, in the rows the text leaves
            for w in (spark_len, spark_thr, self.query_one("#len-label"), self.query_one("#thr-label")):
                set_if_changed(w, "display", False)
            self._mc_charts = None
        elif getattr(self, "_mc_charts", None) is None:
            for w in (spark_len, spark_thr, self.query_one("#len-label"), self.query_one("#thr-label")):
                set_if_changed(w, "display", True)
        if state.spec_enabled is False:
            stats.append("speculation off", f"bold {_rich_color(c.get('text-muted'), 'grey50')}")
            stats.append("\nthe run has no --speculative-algorithm", "dim")
        elif not pts and not live and state.failure:
            stats = failure_text(state, c)  # nothing to show here: the room goes to the failure
        elif not pts:
            stats.append("no decode batch yet" if state.run else "no run", "dim")
            if state.spec_enabled:
                stats.append("\nspeculative decoding on; waiting for the first decode line", "dim")
        else:
            last = pts[-1]
            mean = state.mean_accept()
            if not live and seen is not None:
                stats.append(f"last seen {fmt_duration(state.clock() - seen)} ago ({state.status_label()})\n",
                             "bold dim")
            stats.append("accept len ", "bold")
            stats.append(f"{last.accept_len:.2f}", f"bold {c.get('primary', 'blue')}")
            stats.append(f"   mean {mean:.2f}" if mean is not None else "")
            stats.append(f"  over {state.spec_n} batches\n")
            if state.log_skipped is not None:
                stats.append(middle_text(state), "dim")
            if last.accept_rate is not None:
                meaning = rate_meaning(state.sglang_version)
                stats.append("accept rate ", "bold")
                stats.append(f"{last.accept_rate:.2f}")
                if meaning:
                    stats.append(f" ({meaning})", "dim")
                stats.append("\n")
            if last.throughput is not None:
                stats.append("throughput " if live else "last throughput ", "bold")
                stats.append(f"{last.throughput:.1f} token/s")
            if state.collapsed:
                stats.append("\n ⚠ COLLAPSE: accept length ≈ 1.00, drafts all rejected ",
                             f"bold reverse {c.get('error', 'red')}")
            lens = [p.accept_len for p in pts]
            thr_pts = [p for p in pts if p.throughput is not None]
            thrs = [p.throughput for p in thr_pts]
            for spark, data in ((spark_len, lens), (spark_thr, thrs)):
                set_if_changed(spark, "data", data)  # (left-aligned, one column per batch: BatchSparkline)
            # the sparklines' scale: each bar is one decode batch, from the lowest to the highest value shown
            update_static(self.query_one("#len-label", Static),
                          scale_label("accept length", lens, ".2f", pts[-1].t - pts[0].t), lines=1)
            update_static(self.query_one("#thr-label", Static),
                          scale_label("gen throughput token/s", thrs, ".0f",
                                      thr_pts[-1].t - thr_pts[0].t if thr_pts else None), lines=1)
        lat = state.latency.text() if live and state.latency is not None else ""
        if lat:
            stats.append(("\n" if stats else "") + lat)
        load = load_text(state, capacity_of(state), self.query_one("#spec-stats").size.width or None) if live else ""
        if load:
            stats.append("\n" + load, "dim")
        if not live and stats and pts:
            stats.stylize("dim")
        title = "Speculative decoding [2]" if pts or live or not state.failure else "Failure (no decode batch) [2]"
        if self.border_title != title:
            self.border_title = title
        box = self.query_one("#spec-stats", Static)
        # height: auto: a new layout only when the text's height may change (rows, or a row
        # wider than the box), not for every decode batch (a flood of them is 20 frames/s)
        # the rows the text takes, wrapped at the box's width: a layout only when that changes
        rows = stats.plain.split("\n")
        w = box.size.width  # 0: not laid out yet; one row a line then (at width 1 every
        # character was a row, and the box kept that height for SHRINK_AFTER_S, the charts below
        # pushed out of the pane)
        shape = sum(max(1, -(-cell_len(r) // w)) for r in rows) if w > 0 else len(rows)
        stats, layout = steady_height(box, stats, shape, time.monotonic())
        if stats != getattr(self, "_shown", None):  # the same text again: no repaint at all
            box.update(stats, layout=layout)
            self._shown = stats
        if pts:
            self._fit_charts(self.content_size.height - getattr(box, "_mc_rows", shape))

    def _fit_charts(self, room: int) -> None:
        """The charts in the rows the text leaves (``room``; unknown before the first layout):
        both two rows high where they fit (a label and two rows each), else one row each, else
        the accept length alone, never a chart cut by the pane's edge (at 120x40 the throughput
        chart fell off the pane and the accept length lost its top row)."""
        if self.content_size.height <= 0:
            return
        if room >= 6:
            plan = (2, 2)
        elif room >= 4:
            plan = (1, 1)
        else:
            plan = (max(1, min(2, room - 1)), 0) if room >= 2 else (0, 0)
        if plan == getattr(self, "_mc_charts", None):
            return
        self._mc_charts = plan
        for (label, spark), h in zip((("#len-label", "#spark-len"), ("#thr-label", "#spark-thr")), plan):
            for sel in (label, spark):
                self.query_one(sel).display = h > 0
            if h:
                self.query_one(spark).styles.height = h


    _state: ConsoleState | None = None

    def on_resize(self, _ev) -> None:
        """The slots sentence and the charts' columns are fitted to the width: again at a new one."""
        if self._state is not None:
            self.refresh_from(self._state)


def _rich_color(value: str | None, fallback: str) -> str:
    """``value`` when Rich can parse it as a colour, else ``fallback`` (Textual theme variables
    may hold CSS-only values such as ``auto 60%``, which Rich refuses)."""
    from rich.color import Color, ColorParseError

    try:
        Color.parse(value or "")
    except ColorParseError:
        return fallback
    return value or fallback
