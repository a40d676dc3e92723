"""The status bar at the top: host, SGLang version, run, state, uptime, data age, SIMULATED."""

from __future__ import annotations

import re

from rich.text import Text
from textual.widgets import Static

from mambaconsole.state import ConsoleState, fmt_duration
from mambaconsole.units import fmt_bytes
from mambaconsole.ui.fit import Part, parts_text
from mambaconsole.ui.redraw import update_static

_STATE_STYLE = {
    "ready": "bold $success",
    "starting": "bold $warning",
    "adopted": "bold $accent",
    "dead": "bold $error",
    "stopped": "bold dim",
    "oom": "bold $error",
    "crashed": "bold $error",
    "arg error": "bold $error",
    "never started": "bold $error",
    "connection lost": "bold reverse $error",
    "no run": "dim",
}


def status_text(state: ConsoleState, styles: dict[str, str], width: int | None = None, *,
                read_only: bool = False) -> Text:
    """The two header lines as Rich text. ``styles`` maps state words to Rich styles.

    ``width`` (cells): where the first line is wider, its less important parts give way whole
    (:func:`~mambaconsole.ui.fit.fit_parts`), first the data age's "(run ended)", then the title,
    SGLang's version, the run id, the uptime, the host, the data age, the warnings (behind, log
    silent); the state word with its exit code and SIMULATED always show whole (at 80 columns
    the cut fell in ``STOPPED exit 13…``); None keeps every part.

    The data age is of the followed run's server's last data (a log line, an HTTP answer): ``data
    3 s ago`` while the run lives; once it ended, ``last data 1 min ago (run ended)``: it only
    grows, while the GPU pane (the node's readings) goes on updating."""
    s = state
    parts = [Part(" mambaconsole ", "bold reverse", give_way=0),
             Part(f" {s.host or '?'} ", "bold", give_way=4),
             Part(f" SGLang {s.sglang_version or '?'} ", give_way=1)]
    if s.run is not None:
        parts.append(Part(f" run {s.run.run_id} ", give_way=2))
    word = s.status
    label = s.status_label()
    # while the log's history is read, no state word: a line later in the same read may undo
    # what an earlier one said (a traceback, then the batches the server went on serving)
    reading = s.reading_left() if s.connected and s.run is not None else None
    if word == "connection lost":
        label = f"{label} {fmt_duration(s.lost_for())} ago"
    if reading is not None:
        parts.append(Part(f" ● reading {fmt_bytes(reading)} ", styles.get("starting", "")))
    else:
        parts.append(Part(f" ● {label} ", styles.get(word, "")))
    behind = s.behind_bytes() if s.connected else None
    if behind is not None:
        parts.append(Part(f" behind {fmt_bytes(behind)} ", styles.get("starting", "bold"), give_way=7))
    silent = s.log_silent_for() if s.connected else None
    if silent is not None:
        parts.append(Part(f" log silent {fmt_duration(silent)} (process alive) ", styles.get("starting", "bold"),
                          give_way=6, short=f" log silent {fmt_duration(silent)} "))
    up = s.uptime()
    if up is not None:  # a run that ended: how long it ran, not an uptime
        ended = s.run is not None and s.run.ended is not None
        parts.append(Part(f" {'ran' if ended else 'up'} {fmt_duration(up)} ", give_way=3))
    if s.last_data is not None:  # the server's own data (log lines, HTTP): ages once it stops
        age = fmt_duration(max(0.0, s.clock() - s.last_data))
        if s.slices.runs.ended():  # no more will come: the age of its last, said as such (the GPU pane goes on)
            parts.append(Part(f" last data {age} ago ", "dim", give_way=5))
            parts.append(Part("(run ended) ", "dim", give_way=-1))  # the state word says it too: it goes first
        else:
            parts.append(Part(f" data {age} ago ", "dim", give_way=5))
    if read_only:  # --read-only: the keys that change the node are off, said where it always shows
        parts.append(Part(" READ-ONLY ", "bold reverse"))
    if s.simulated:
        parts.append(Part(" SIMULATED ", styles.get("simulated", "reverse")))
    t = parts_text(parts, width)
    t.append("\n")
    if not s.connected:
        retry = ""
        if s.retry_at is not None:
            retry = f"; next try in {fmt_duration(max(0.0, s.retry_at - s.clock()))}"
        elif s.reconnect_attempts:
            retry = "; trying now"
        t.append(f" reconnecting (attempt {s.reconnect_attempts + 1}{retry}); the server keeps running in tmux"
                 f"{': ' + s.connection_detail if s.connection_detail else ''}", styles.get("connection lost", "bold"))
    elif s.phase is not None:
        t.append(f" relaunch: {s.phase.text}", styles.get("starting", "bold"))
    elif reading is not None:
        t.append(" reading the log's history (what it held when the console opened it); the run's state once read",
                 "dim")
    elif s.status == "stopped":
        when = s.run.ended if s.run is not None else None
        t.append(" stopped by a console" + (f" {fmt_duration(max(0.0, s.clock() - when))} ago" if when else ""), "dim")
    elif s.failure:
        t.append(f" {s.failure_headline}", styles.get("dead", "bold"))
    elif s.run is not None and s.run.state == "never_started":
        t.append(f" the run never started: {short_paths(s.run.error or 'no server process was ever recorded')}",
                 styles.get("dead", "bold"))
    elif s.notice:
        t.append(f" {s.notice}", styles.get("starting", "bold"))
    elif s.run is not None and s.run.log_lost:
        t.append(f" ⚠ {s.run.log_lost} on the node; the server kept running, its log has a gap",
                 styles.get("starting", "bold"))
    elif s.request_error:
        what = "request error" if s.ready_seen else "traceback while starting (process alive)"
        many = f"{s.request_errors} {what}s, last: " if s.request_errors > 1 else f"{what}: "
        t.append(f" ⚠ {many}{s.request_error}", styles.get("starting", "bold"))
    elif s.no_sglang:
        t.append(f" ⚠ {s.python} on the node has no sglang: watching only; launch, relaunch and pre-flight need "
                 "SGLang's python (--python PATH, or python in the settings)", styles.get("starting", "bold"))
    elif s.run is None and s.not_adopted:
        o = s.not_adopted[0]
        where = f"tmux session {o['tmux_session']}" if o.get("tmux_session") else "outside tmux"
        t.append(f" a server of yours runs {where} (pid {o.get('pid')}), not adopted: "
                 f"mambaconsole runs {s.host or 'HOST'} --adopt adopts it", styles.get("starting", "bold"))
    elif s.slices.ranks.line:  # a run across nodes: every rank's fate, read from its node
        t.append(f" ranks: {s.slices.ranks.line}", styles.get("dead", "bold") if s.slices.ranks.bad else "")
    elif s.run is not None and s.run.argv:
        t.append(" " + " ".join(s.run.argv), "dim")
    return t


class StatusBar(Static):
    """Always-visible two-line header. ``refresh_from(state)`` redraws it."""

    DEFAULT_CSS = """
    StatusBar { height: 2; background: $panel; color: $foreground; }
    """

    def refresh_from(self, state: ConsoleState) -> None:
        v = self.app.theme_variables
        styles = {}
        for word, spec in _STATE_STYLE.items():
            parts = []
            for p in spec.split():
                parts.append(v.get(p[1:], "red") if p.startswith("$") else p)
            styles[word] = " ".join(parts)
        styles["simulated"] = f"bold reverse {v.get('warning', 'yellow')}"
        width = self.size.width
        read_only = bool(getattr(self.app, "read_only", False))
        update_static(self, fit_lines(status_text(state, styles, width or None, read_only=read_only), width),
                      lines=2)  # height: 2, whatever the text: never a layout

    def on_resize(self) -> None:
        if getattr(self.app, "state", None) is not None:
            self.refresh_from(self.app.state)


def fit_lines(text: Text, width: int) -> Text:
    """Each line of ``text`` cut to ``width`` cells with an ellipsis: a line never wraps onto
    the next (at 80 columns the first line wrapped and pushed the failure line out)."""
    if width <= 0:
        return text
    lines = text.split("\n", allow_blank=True)
    for ln in lines:
        ln.truncate(width, overflow="ellipsis")
    out = Text("\n").join(lines)
    out.no_wrap = True
    return out


_LONG_PATH = re.compile(r"/(?:[^/\s'\"]+/){4,}[^/\s'\"]+")


def short_paths(text: str, keep: int = 3) -> str:
    """``text`` with every absolute path of five or more parts cut to ``/first/…/`` plus its last
    ``keep`` parts (``/tmp/…/no-such-venv/bin/python``): on a one-line header the end of a path
    names the program; the log keeps it whole."""
    def cut(m: re.Match) -> str:
        parts = m.group(0).split("/")[1:]
        return "/" + parts[0] + "/…/" + "/".join(parts[-keep:])
    return _LONG_PATH.sub(cut, text)
