"""Errors that the command line reports as one line, without a traceback."""


class ConsoleError(Exception):
    """A failure a person can act on. ``str(err)`` is the whole one-line message.

    The CLI prints ``mambaconsole: error: <message>`` and exits with ``exit_code``.
    """

    exit_code = 1

    def __init__(self, message: str, *, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class UsageError(ConsoleError):
    """The command line itself is wrong (exit status 2, like argparse)."""

    exit_code = 2
