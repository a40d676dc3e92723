"""The ``mambaconsole`` entry point.

``mambaconsole HOST`` opens the console; ``mambaconsole SUBCOMMAND ...`` runs one of the
non-interactive commands listed in :data:`COMMANDS`. Each command lives in its own module
under :mod:`mambaconsole.commands` and exposes::

    HELP: str                                   # one line for ``mambaconsole --help``
    def add_arguments(parser: argparse.ArgumentParser) -> None
    def run(args: argparse.Namespace) -> int    # the exit status
    REST: str                                   # optional: the attribute that gets every
                                                # word after the first ``--``, verbatim
    SCREEN: str                                 # optional: a ui/ module whose run(args) is the
    def wants_screen(args) -> bool              # interactive form, used when wants_screen(args)

Errors derived from :class:`mambaconsole.errors.ConsoleError` are printed as one line
(``mambaconsole: error: ...``) with the error's exit status; no traceback.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import os
import re
import sys
from collections.abc import Sequence

from mambaconsole import __version__
from mambaconsole.errors import ConsoleError

#: subcommand name -> module implementing it
COMMANDS: dict[str, str] = {
    "doctor": "mambaconsole.commands.doctor",
    "launch": "mambaconsole.commands.launch",
    "runs": "mambaconsole.commands.runs",
    "stop": "mambaconsole.commands.stop",
    "inspect": "mambaconsole.commands.inspect",
    "resolve": "mambaconsole.commands.resolve",
    "plan": "mambaconsole.commands.plan",
    "report": "mambaconsole.commands.report",
    "fleet": "mambaconsole.commands.fleet",
}


def _load(name: str):
    try:
        return importlib.import_module(COMMANDS[name])
    except ModuleNotFoundError as exc:
        if exc.name == COMMANDS[name]:
            return None
        raise


def mistyped_command(word: str) -> str | None:
    """The subcommand ``word`` is a likely typo of (``doctr`` → ``doctor``; :func:`difflib.get_close_matches`,
    ratio >= 0.75), when ``word`` is a bare name (a host given as ``user@host``, ``host:port``, a
    dotted name or ``local`` is never one); else None. ``mambaconsole -- NAME`` always opens the
    console on host NAME."""
    if not word or word.startswith("-") or word == "local" or any(c in word for c in "@:./"):
        return None
    near = difflib.get_close_matches(word, list(COMMANDS), n=1, cutoff=0.75)
    return near[0] if near else None


class _Parser(argparse.ArgumentParser):
    """argparse that names the option an unknown one is a likely typo of (``--dmeo`` → ``--demo``)."""

    def error(self, message: str):  # type: ignore[override]
        m = re.match(r"unrecognized arguments: (\S+)", message)
        if m and m.group(1).startswith("--"):
            known = [o for a in self._actions for o in a.option_strings if o.startswith("--")]
            near = difflib.get_close_matches(m.group(1).split("=")[0], known, n=1, cutoff=0.7)
            if near:
                message += f"; did you mean {near[0]}?"
        super().error(message)


def _console_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="mambaconsole",
        description="Terminal debugging console for live SGLang servers. "
        "Subcommands: " + ", ".join(COMMANDS) + " (mambaconsole SUBCOMMAND --help).",
    )
    p.add_argument("host", nargs="?", help="ssh alias, user@host[:port], or 'local'")
    p.add_argument("--demo", action="store_true", help="the console on the built-in simulated node")
    p.add_argument("--read-only", action="store_true", help="follow only: hide every key that changes the node")
    # per-host settings (config.toml [hosts.HOST]) overridden by these flags
    p.add_argument("--python", help="the server's python on the node (SGLang's)")
    p.add_argument("--session", help="tmux session of the server runs (default sglang)")
    p.add_argument("--port", type=int, help="the server's HTTP port on the node (default 30000)")
    p.add_argument("--workdir", help="working directory of new runs on the node")
    p.add_argument("--theme", help="mamba-dark, mamba-light, mamba-contrast, or a theme of your own")
    p.add_argument("--version", action="version", version=f"mambaconsole {__version__}")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """The ``mambaconsole`` command: its exit status (2 for a usage error, 130 on ctrl+c, 141
    when the reader of its output went away)."""
    try:
        code = _main(argv)
        sys.stdout.flush()  # here, not at exit: a closed pipe is then ours to handle
        return code
    except BrokenPipeError:
        # the reader went away (`mambaconsole inspect LOG | head`): stop quietly, as cat does;
        # stdout goes to /dev/null so the interpreter's last flush cannot raise again
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, what a shell reports for a writer killed by SIGPIPE


def _main(argv: Sequence[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] in COMMANDS:
            name = argv[0]
            module = _load(name)
            if module is None:
                print(f"mambaconsole: error: '{name}' is not built yet", file=sys.stderr)
                return 2
            parser = _Parser(prog=f"mambaconsole {name}", description=module.HELP)
            module.add_arguments(parser)
            rest_name = getattr(module, "REST", None)
            words = argv[1:]
            if rest_name and "--" in words:
                # `CMD ... -- ARGS`: everything after the first `--` is the command's REST
                # argument, whatever it looks like (argparse cannot mix that with positionals)
                cut = words.index("--")
                args = parser.parse_args(words[:cut])
                setattr(args, rest_name, words[cut + 1:])
            else:
                args = parser.parse_args(words)
            screen = getattr(module, "SCREEN", None)
            if screen and module.wants_screen(args):
                # the command's interactive form lives in ui/ (the command module stays Textual-free)
                return int(importlib.import_module(screen).run(args) or 0)
            return int(module.run(args) or 0)
        if argv and (near := mistyped_command(argv[0])) is not None:
            print(f"mambaconsole: error: '{argv[0]}' is not a subcommand; did you mean '{near}'? "
                  f"(mambaconsole {near} --help; a host of that name: mambaconsole -- {argv[0]})", file=sys.stderr)
            return 2
        args = _console_parser().parse_args(argv)
        from mambaconsole.ui import hold_collector, release_collector

        hold_collector()  # until the log's history is read: start-up builds only what lives as long as it
        try:
            opened = None
            try:
                if args.demo:
                    from mambaconsole.ui import app as ui_app
                else:
                    # the node's first command runs while the UI is imported
                    from mambaconsole import opening

                    opened = opening.open_host(args.host, opening.host_overrides(args))
                    ui_app = opened.ui
            except ModuleNotFoundError as exc:
                if exc.name != "mambaconsole.ui.app":
                    raise
                print("mambaconsole: error: the console is not built yet; try 'mambaconsole doctor local'",
                      file=sys.stderr)
                return 2
            return int(ui_app.run(args, opened) or 0)
        finally:
            release_collector()
    except ConsoleError as exc:
        # the message may quote the node (a tmux error, an argv): no escape reaches the terminal
        text = re.sub(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]", lambda m: "\\x%02x" % ord(m.group(0)), str(exc))
        print(f"mambaconsole: error: {text}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
