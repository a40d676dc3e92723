import subprocess
import sys
from pathlib import Path

from mambaconsole.cli import COMMANDS, main

ROOT = Path(__file__).resolve().parents[1]


def test_version_flag(capsys):
    try:
        main(["--version"])
    except SystemExit as exc:
        assert exc.code == 0
    assert "mambaconsole" in capsys.readouterr().out


def test_every_subcommand_module_is_named_in_the_package():
    for name, module in COMMANDS.items():
        assert module == f"mambaconsole.commands.{name}"


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
