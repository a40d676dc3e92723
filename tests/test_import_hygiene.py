"""The layer rules, checked (design.md §3): ``sglang/`` is pure knowledge, and nothing outside
``ui/`` (and the CLI's wiring) imports ``ui/`` or Textual, so commands, the session layer, the
node layer and the simulator run without a UI; and no two modules import each other. Every import statement is read, also the ones
inside functions (a lazy ``from mambaconsole.ui...`` counts)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "tui" / "mambaconsole"
HEADLESS = ("commands", "session", "sglang", "node", "agent", "sim", "slices")


def _imports(path: Path, *, runtime: bool = False) -> list[str]:
    """Every module ``path`` imports; ``runtime``: less those under ``if TYPE_CHECKING:``."""
    tree = ast.parse(path.read_text(), str(path))
    if runtime:
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                node.body = []
    names = []
    for node in ast.walk(tree):
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


def test_top_level_modules_import_neither_ui_nor_textual():
    """The package's own modules (state, backoff, units, resolve, ...) are headless too; only
    the CLI's wiring (``cli.py``, ``__main__.py``) reaches ``ui/``."""
    bad = []
    for path in sorted(PKG.glob("*.py")):
        if path.name in ("cli.py", "__main__.py"):
            continue
        for name in _imports(path):
            if name == "textual" or name.startswith(("textual.", "mambaconsole.ui")):
                bad.append(f"{path.relative_to(PKG)}: {name}")
    assert bad == []


def test_headless_modules_load_without_textual():
    """Importing every headless module leaves Textual and ui/ unloaded."""
    mods = sorted(".".join(("mambaconsole",) + p.relative_to(PKG).with_suffix("").parts)
                  for layer in ("commands", "session", "sglang", "node", "slices") for p in (PKG / layer).rglob("*.py")
                  if p.name != "__main__.py")
    code = ("import importlib, sys\n"
            f"for m in {mods!r}: importlib.import_module(m.removesuffix('.__init__'))\n"
            "bad = sorted(m for m in sys.modules if m == 'textual' or m.startswith(('textual.', 'mambaconsole.ui')))\n"
            "print(bad)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def _module_name(path: Path) -> str:
    parts = ("mambaconsole",) + path.relative_to(PKG).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_no_import_cycles():
    """No module imports, directly or through others, a module that imports it back (lazy
    imports inside functions count: ``ui/app.py`` and the demo once imported each other)."""
    mods = {_module_name(p): p for p in PKG.rglob("*.py")}
    # (the imports name ``x.y`` for ``from x import y``: a module imported that way counts too)
    graph = {m: {n for n in _imports(p, runtime=True) if n in mods and n != m} for m, p in mods.items()}
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1 on the path, 2 done

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                cycles.append(path[path.index(n):] + [n] if n in path else [m, n])
            elif n not in state:
                visit(n, path + [n])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert cycles == [], cycles
