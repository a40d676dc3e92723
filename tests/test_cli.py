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
