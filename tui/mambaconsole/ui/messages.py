"""Every message the console's workers and its session post. Workers never touch widgets: they
post one of these; the app's handlers fold it into :class:`mambaconsole.state.ConsoleState`
(through the session) and refresh the panes it names."""

from __future__ import annotations

from textual.message import Message


class SessionCall(Message):
    """A callback of the session's (:attr:`mambaconsole.session.session.Session.dispatch`: an
    answer from the node to apply), run by the app in order with the other messages."""

    def __init__(self, fn) -> None:
        super().__init__()
        self.fn = fn


class LogPending(Message):
    """Log lines wait in the app's intake (:class:`mambaconsole.session.intake.LogIntake`)."""


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
