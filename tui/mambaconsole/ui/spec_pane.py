"""Speculative decoding pane: accept length and accept rate over time (sparklines), current
and mean, throughput, the collapse alarm, and "speculation off" when the run has none.

Accept rate is shown as SGLang printed it; its meaning changed in 0.5.11 (drafts only, bonus
token excluded; 0.5.9-0.5.10 include the bonus token): the pane says which."""

from __future__ import annotations

from rich.cells import cell_len
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Sparkline, Static

from mambaconsole.sglang.spec import DRAFTS_ONLY, WITH_BONUS, accept_rate_meaning
from mambaconsole.state import ConsoleState
from mambaconsole.ui.redraw import set_if_changed


def rate_meaning(version: str | None) -> str:
    """How the version's log defines accept rate (sglang-observables §2.4), for display."""
    m = accept_rate_meaning(version)
    return {DRAFTS_ONLY: "drafts only", WITH_BONUS: "incl. bonus token"}.get(m, "")


class SpecPane(Vertical):
    DEFAULT_CSS = """
    SpecPane #spec-stats { height: auto; }
    SpecPane Sparkline { height: 2; margin: 0 1; }
    SpecPane .spark-label { height: 1; color: $text-muted; }
    """

    def compose(self) -> ComposeResult:
        yield Static("", id="spec-stats")
        yield Static("accept length", classes="spark-label", id="len-label")
        yield Sparkline([], id="spark-len")
        yield Static("gen throughput (token/s)", classes="spark-label", id="thr-label")
        yield Sparkline([], id="spark-thr")

    def refresh_from(self, state: ConsoleState) -> None:
        c = self.app.theme_variables
        stats = Text()
        pts = state.spec.tail(200)  # the sparklines' points (SPEC_KEEP are kept)
        spark_len = self.query_one("#spark-len", Sparkline)
        spark_thr = self.query_one("#spark-thr", Sparkline)
        show = bool(pts)
        for w in (spark_len, spark_thr, self.query_one("#len-label"), self.query_one("#thr-label")):
            set_if_changed(w, "display", show)
        if state.spec_enabled is False:
            stats.append("speculation off", f"bold {_rich_color(c.get('text-muted'), 'grey50')}")
            stats.append("\nthe run has no --speculative-algorithm", "dim")
        elif not pts:
            stats.append("no decode batch yet" if state.run else "no run", "dim")
            if state.spec_enabled:
                stats.append("\nspeculative decoding on; waiting for the first decode line", "dim")
        else:
            last = pts[-1]
            mean = state.mean_accept()
            stats.append("accept len ", "bold")
            stats.append(f"{last.accept_len:.2f}", f"bold {c.get('primary', 'blue')}")
            stats.append(f"   mean {mean:.2f}" if mean is not None else "")
            stats.append(f"  over {state.spec_n} batches\n")
            if last.accept_rate is not None:
                meaning = rate_meaning(state.sglang_version)
                stats.append("accept rate ", "bold")
                stats.append(f"{last.accept_rate:.2f}")
                if meaning:
                    stats.append(f" ({meaning})", "dim")
                stats.append("\n")
            if last.throughput is not None:
                stats.append("throughput ", "bold")
                stats.append(f"{last.throughput:.1f} token/s")
            if state.collapsed:
                stats.append("\n ⚠ COLLAPSE: accept length ≈ 1.00, drafts all rejected ",
                             f"bold reverse {c.get('error', 'red')}")
            set_if_changed(spark_len, "data", [p.accept_len for p in pts])
            set_if_changed(spark_thr, "data", [p.throughput for p in pts if p.throughput is not None])
        m = state.metrics
        extra = []
        for key, label in (("sglang:num_running_reqs", "running"), ("sglang:num_queue_reqs", "queued"),
                           ("sglang:token_usage", "token usage")):
            if key in m:
                extra.append(f"{label} {m[key]:g}")
        if extra:
            stats.append("\n" + "  ".join(extra), "dim")
        box = self.query_one("#spec-stats", Static)
        # height: auto: a new layout only when the text's height may change (rows, or a row
        # wider than the box), not for every decode batch (a flood of them is 20 frames/s)
        rows = stats.plain.split("\n")
        shape = (len(rows), max(cell_len(r) for r in rows) > box.size.width)
        if stats != getattr(self, "_shown", None):  # the same text again: no repaint at all
            box.update(stats, layout=shape != getattr(self, "_shape", None) or shape[1])
            self._shown = stats
        self._shape = shape


def _rich_color(value: str | None, fallback: str) -> str:
    """``value`` when Rich can parse it as a colour, else ``fallback`` (Textual theme variables
    may hold CSS-only values such as ``auto 60%``, which Rich refuses)."""
    from rich.color import Color, ColorParseError

    try:
        Color.parse(value or "")
    except ColorParseError:
        return fallback
    return value or fallback
