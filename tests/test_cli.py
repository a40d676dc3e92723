import subprocess
import sys
from pathlib import Path

import pytest

from mambaconsole.cli import COMMANDS, main

ROOT = Path(__file__).resolve().parents[1]


def test_version_flag(capsys):
    try:
        main(["--version"])
    except SystemExit as exc:
        assert exc.code == 0
    assert "mambaconsole" in capsys.readouterr().out


def test_every_subcommand_imports_and_answers_help(capsys):
    """Each command module of the package is in COMMANDS and each one imports and prints its
    own --help through the entry point (a module missing, broken or not wired fails here)."""
    package = ROOT / "tui" / "mambaconsole" / "commands"
    modules = {p.stem for p in package.glob("*.py") if not p.stem.startswith("_")}
    assert set(COMMANDS) == modules
    for name in COMMANDS:
        with pytest.raises(SystemExit) as done:
            main([name, "--help"])
        out = capsys.readouterr().out
        assert done.value.code == 0, name
        assert out.startswith(f"usage: mambaconsole {name}"), out


def test_a_mistyped_subcommand_is_not_taken_for_a_host(capsys):
    """``mambaconsole doctr`` tried to SSH to a host 'doctr': it names the command instead,
    and how to mean a host of that name."""
    assert main(["doctr"]) == 2
    err = capsys.readouterr().err
    assert "did you mean 'doctor'?" in err and "mambaconsole -- doctr" in err
    assert main(["inspct", "x.log"]) == 2 and "'inspect'" in capsys.readouterr().err


def test_a_mistyped_option_names_the_option(capsys):
    """``--dmeo`` was 'unrecognized arguments' with no hint; a subcommand's options too."""
    import pytest

    with pytest.raises(SystemExit) as done:
        main(["--dmeo"])
    assert done.value.code == 2 and "did you mean --demo?" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["runs", "local", "--jsno"])
    assert "did you mean --json?" in capsys.readouterr().err


def test_readme_names_the_test_command_that_ci_runs():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert "bash tests/run.sh" in readme
    assert "bash tests/run.sh" in ci


def test_module_entry_point_runs():
    out = subprocess.run([sys.executable, "-m", "mambaconsole", "--help"], capture_output=True, text=True)
    assert out.returncode == 0
    assert "doctor" in out.stdout


def test_console_on_an_unreachable_host_is_one_line_error(tmp_path):
    """A mistyped host (no ssh config entry, no such name) ends at once with one line,
    instead of a console that reconnects forever."""
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-m", "mambaconsole", "no-such-host-xyz.invalid"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode != 0
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mambaconsole: error:"), out.stderr
    assert "no-such-host-xyz.invalid" in lines[0]


def test_console_without_a_terminal_refuses(tmp_path):
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-m", "mambaconsole", "local"], capture_output=True, text=True,
                         env=env, timeout=60, stdin=subprocess.DEVNULL)
    assert out.returncode == 1
    assert out.stderr.strip().splitlines() == [out.stderr.strip()]
    assert "needs a terminal" in out.stderr


def test_a_reader_that_goes_away_ends_the_command_quietly(tmp_path):
    """`mambaconsole inspect LOG | head`: the reader closes the pipe; the command stops with
    128 + SIGPIPE and no traceback nor "Exception ignored" on stderr (Python ignores SIGPIPE,
    so the write raises BrokenPipeError, here or at the interpreter's last flush)."""
    import os

    log = tmp_path / "server.log"
    log.write_text("".join(f"[2026-12-01 10:00:{i % 60:02d}] Decode batch, #running-req: 1, #token: {i}, "
                           f"token usage: 0.01, gen throughput (token/s): 10.00, #queue-req: 0\n"
                           for i in range(2000)))
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first byte
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tui")}
    p = subprocess.run([sys.executable, "-m", "mambaconsole", "inspect", str(log)], stdout=write,
                       stderr=subprocess.PIPE, text=True, env=env, timeout=120)
    os.close(write)
    assert p.returncode == 141, p.stderr
    assert "Traceback" not in p.stderr and "BrokenPipeError" not in p.stderr, p.stderr
