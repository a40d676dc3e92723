"""Every message the console's workers post. Workers never touch widgets: they post one of
these; the app's handlers fold it into :class:`mambaconsole.state.ConsoleState` and refresh
the panes it names."""

from __future__ import annotations

from typing import Any

from textual.message import Message


class Fed(Message):
    """A state event (any of the dataclasses in :mod:`mambaconsole.state`) from a worker.
    ``poll`` names the poller that produced it, so the app arms that poller's next run only
    after this one was handled."""

    def __init__(self, event: Any, poll: str | None = None) -> None:
        super().__init__()
        self.event = event
        self.poll = poll


class LogPending(Message):
    """Log lines wait in the app's intake (:class:`mambaconsole.ui.intake.LogIntake`)."""


class PollFailed(Message):
    """A poller failed (``poll``: its name; ``error``: one line). The next poll is armed anyway."""

    def __init__(self, poll: str, error: str) -> None:
        super().__init__()
        self.poll = poll
        self.error = error


class PreflightDone(Message):
    """The resolver's verdict on an edited argv (issue-4 JSON shape), or ``error`` (one line)
    when the pre-flight itself could not run."""

    def __init__(self, argv: list[str], result: dict | None, error: str | None = None) -> None:
        super().__init__()
        self.argv = argv
        self.result = result
        self.error = error


class RelaunchDone(Message):
    """The relaunch loop ended: ``run_id`` of the new run, or ``error`` (one line); ``lock``:
    the other console's relaunch lock when that was the reason (``stale``: breakable); ``argv``
    what was to be launched and ``run_env`` with which environment and folder (the editor's; None:
    the old run's), to retry after breaking a stale lock."""

    def __init__(self, run_id: str | None, error: str | None = None, lock: dict | None = None,
                 argv: list[str] | None = None, run_env: tuple[dict, str | None] | None = None) -> None:
        super().__init__()
        self.run_id = run_id
        self.error = error
        self.lock = lock
        self.argv = argv
        self.run_env = run_env


class SourceRead(Message):
    """Lines of an SGLang source file around a writer line, read from the node."""

    def __init__(self, path: str, line: int, text: str | None, error: str | None = None) -> None:
        super().__init__()
        self.path = path
        self.line = line
        self.text = text
        self.error = error


class ParamsRead(Message):
    """The node parser's option metadata for the editor (list of dicts), or ``error``."""

    def __init__(self, params: list[dict] | None, error: str | None = None) -> None:
        super().__init__()
        self.params = params
        self.error = error
