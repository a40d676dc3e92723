"""Pyflakes' checks (ruff's ``F`` rules) over the package, the tests, the benchmarks and the
scripts: undefined names, unused imports and variables, a name bound twice where the first was
never used, f-strings without placeholders."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_pyflakes_checks_pass():
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff is not installed (the test extra has it)")
    r = subprocess.run([ruff, "check", "--no-cache", "--select", "F", "--output-format", "concise",
                        "tui", "tests", "bench", "scripts"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
