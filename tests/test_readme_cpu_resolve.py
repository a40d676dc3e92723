"""README's "Without a GPU node" example runs as written: the command from the README, with the
test venv for ``~/.cache/mambaconsole-test/venvs`` and the checkout for ``$PWD``, prints the
lines the README shows under it."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from fixtures.sglang_venvs import sglang_python, venv_root

ROOT = Path(__file__).resolve().parents[1]

pytestmark = [pytest.mark.sglang, pytest.mark.timeout(300)]


def readme_example() -> tuple[list[str], list[str]]:
    text = (ROOT / "README.md").read_text()
    part = text[text.index("**Without a GPU node.**"):]
    block = re.search(r"```\n(.*?)```", part, re.S)[1]
    command = block.split("\n", 1)[0]
    lines = block.splitlines()
    cmd = []
    for ln in lines:  # the $ line and its continuations
        cmd.append(ln.rstrip("\\").strip())
        if not ln.endswith("\\"):
            break
    argv = shlex.split(" ".join(cmd).removeprefix("$ ").replace("$PWD", str(ROOT)))
    expected = [ln.strip() for ln in lines[len(cmd):] if ln.strip()]
    assert command.startswith("$ mambaconsole resolve") and expected
    return argv, expected


def test_the_readme_resolve_example_without_a_gpu():
    sglang_python("0.5.23")  # the venv exists (skipped with the command to build it otherwise)
    argv, expected = readme_example()
    argv = [a.replace("~/.cache/mambaconsole-test/venvs", str(venv_root())) for a in argv]
    assert argv[0] == "mambaconsole"
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    env["COLUMNS"] = "200"
    r = subprocess.run([sys.executable, "-m", "mambaconsole", *argv[1:]], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=240)
    out = " ".join((r.stdout + r.stderr).split())
    for line in expected:
        assert " ".join(line.split()) in out, (line, out[:2000])
