"""The layer rules, checked (design.md §3): ``sglang/`` is pure knowledge, and nothing outside
``ui/`` (and the CLI's wiring) imports ``ui/`` or Textual, so commands, the session layer, the
node layer and the simulator run without a UI. Every import statement is read, also the ones
inside functions (a lazy ``from mambaconsole.ui...`` counts)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "tui" / "mambaconsole"
HEADLESS = ("commands", "session", "sglang", "node", "agent", "sim")


def _imports(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
            names += [f"{node.module}.{a.name}" for a in node.names]
    return names


@pytest.mark.parametrize("layer", HEADLESS)
def test_headless_layers_import_neither_ui_nor_textual(layer):
    bad = []
    for path in sorted((PKG / layer).rglob("*.py")):
        for name in _imports(path):
            if name == "textual" or name.startswith(("textual.", "mambaconsole.ui")):
                bad.append(f"{path.relative_to(PKG)}: {name}")
    assert bad == []


def test_headless_modules_load_without_textual():
    """Importing every headless module leaves Textual and ui/ unloaded."""
    mods = sorted(".".join(("mambaconsole",) + p.relative_to(PKG).with_suffix("").parts)
                  for layer in ("commands", "session", "sglang", "node") for p in (PKG / layer).rglob("*.py")
                  if p.name != "__main__.py")
    code = ("import importlib, sys\n"
            f"for m in {mods!r}: importlib.import_module(m.removesuffix('.__init__'))\n"
            "bad = sorted(m for m in sys.modules if m == 'textual' or m.startswith(('textual.', 'mambaconsole.ui')))\n"
            "print(bad)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
