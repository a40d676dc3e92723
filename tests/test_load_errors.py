"""SGLang's load-time refusals (:mod:`mambaconsole.sglang.load_errors`) read back from the real
SGLang 0.5.11 and 0.5.23 sources in the test venvs: each cited line is an ``if`` check inside
the cited function, the exception named is raised within the next lines with the message's
head, and a version marked as not raising it has the message nowhere in its package."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fixtures.sglang_venvs import sglang_python
from mambaconsole.sglang.load_errors import LOAD_ERRORS, MAMBA_CACHE_NONPOSITIVE, NOT_ENOUGH_MEMORY


def package(version: str) -> Path:
    py = sglang_python(version)
    return next(Path(py).parents[1].glob("lib/python3*/site-packages")) / "sglang"


CASES = [(e, v) for e in LOAD_ERRORS for v in e.sites]


@pytest.mark.parametrize("error, version", CASES, ids=[f"{e.message[:24]}-{v}" for e, v in CASES])
def test_each_site_is_the_check_that_raises_it(error, version):
    site = error.sites[version]
    if site is None:
        hits = [p for p in package(version).rglob("*.py") if error.message[:40] in p.read_text(errors="replace")]
        assert hits == [], hits
        return
    rel, line, function = site
    lines = (package(version) / rel).read_text().splitlines()
    assert lines[line - 1].strip().startswith("if "), lines[line - 1]
    after = "\n".join(lines[line: line + 14])
    assert f"raise {error.exception}(" in after
    # the message's head as written, possibly split over f-string pieces
    pieces = re.findall(r'f?"([^"]*)"', after)
    assert error.message in "".join(pieces)
    # the enclosing function: the nearest def above the line
    name = function.rsplit(".", 1)[-1]
    defs = [ln for ln in lines[:line] if re.match(r"\s*def \w+", ln)]
    assert re.match(rf"\s*def {name}\(", defs[-1]), defs[-1]


def test_site_per_version():
    assert NOT_ENOUGH_MEMORY.site("0.5.11") == "srt/model_executor/pool_configurator.py:40"
    assert NOT_ENOUGH_MEMORY.site("0.5.24") == "srt/model_executor/pool_configurator.py:95"
    assert NOT_ENOUGH_MEMORY.site("0.5.9") == "srt/model_executor/pool_configurator.py:40"
    assert NOT_ENOUGH_MEMORY.site("0.5.15") is None  # between the versions read: not claimed
    assert MAMBA_CACHE_NONPOSITIVE.site("0.5.11") is None
    assert MAMBA_CACHE_NONPOSITIVE.site(None) is None
