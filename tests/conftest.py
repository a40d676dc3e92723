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
