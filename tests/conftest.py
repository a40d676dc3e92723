"""Shared test set-up. Fixture modules live in tests/fixtures/ and are loaded as plugins, so
each part of the suite can add its own without editing this file."""

from __future__ import annotations

import os
from pathlib import Path

_FIXTURES = Path(__file__).parent / "fixtures"
pytest_plugins = sorted(
    f"fixtures.{p.stem}" for p in _FIXTURES.glob("*.py") if not p.stem.startswith("_")
)

#: the folder holding ../shared (cases and reference), next to the repository
SHARED = Path(os.environ.get("MAMBACONSOLE_SHARED", Path(__file__).resolve().parents[2] / "shared"))


# Under CI (CI=true) nothing may be skipped: a missing sshd, tmux or SGLang test venv there is a
# broken set-up, not a reason to pass quietly. Locally a skip stays a skip, with its reason.
_CI = os.environ.get("CI", "").lower() not in ("", "0", "false", "no")

if _CI:
    import pytest

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(item, call):
        outcome = yield
        report = outcome.get_result()
        if report.skipped and not hasattr(report, "wasxfail"):
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
            report.outcome = "failed"
            report.longrepr = f"skipped under CI, which must run every test: {reason}"

    @pytest.hookimpl(hookwrapper=True)
    def pytest_make_collect_report(collector):
        outcome = yield
        report = outcome.get_result()
        if report.skipped:
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
            report.outcome = "failed"
            report.longrepr = f"module skipped under CI, which must run every test: {reason}"
