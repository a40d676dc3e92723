"""Generate ``tui/mambaconsole/sglang/flag_table.py``: the launch flags each released SGLang
0.5.9 .. 0.5.23 accepts, read from SGLang's own parser, and which of them are deprecated.

For each version: ``pip download --no-deps sglang==X`` (into ``--wheels``, kept between runs),
unpack its ``sglang/`` sources into a temporary folder, and in a child process run that
version's ``ServerArgs.add_cli_args(argparse.ArgumentParser())`` (``srt/server_args.py``) with
that folder first on ``sys.path`` under an installed SGLang venv's python (``--python``; its
torch and friends serve every version; a third-party module the venv lacks is stubbed: the
parser's definition does not use them). Each parser action gives its option strings and
whether SGLang marks it deprecated: an action class named ``Deprecated*`` (0.5.23
``srt/arg_groups/argparse_actions.py``: ``new_flag`` / ``error_message`` name the
replacement), or a help text that says "deprecated" (older versions).

Usage::

    python scripts/gen_flag_table.py --python ~/.cache/mambaconsole-test/venvs/sglang-0.5.11/bin/python \\
        --python ~/.cache/mambaconsole-test/venvs/sglang-server-0.5.23/bin/python --wheels /tmp/sgl-wheels

The output is committed (data, not fetched at run time).
"""

from __future__ import annotations

import argparse
import json
import os
import pprint
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

VERSIONS = [f"0.5.{n}" for n in range(9, 24)]
OUT = Path(__file__).resolve().parents[1] / "tui" / "mambaconsole" / "sglang" / "flag_table.py"
#: the test venvs' import stub (torchvision, which they do not install), tests/sglang_venvs.sh
STUB = Path(__file__).resolve().parents[1] / "tests" / "sglang-venvs" / "stub"

CHILD = r'''
import argparse, importlib.abc, importlib.machinery, json, os, re, sys, types

class _Stub(types.ModuleType):
    __path__ = []
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _any(name)

class _Meta(type):
    def __getattr__(cls, n):
        if n.startswith("__"):
            raise AttributeError(n)
        return _any(n)

def _any(name):
    return _Meta(name, (), {"__init__": lambda self, *a, **k: None, "__call__": lambda self, *a, **k: self,
                           "__getattr__": lambda self, n: self, "__class_getitem__": classmethod(lambda c, i: c),
                           "__or__": lambda self, o: self, "__ror__": lambda self, o: self})

class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] == "sglang":
            return None
        top = sys.modules.get(name.split(".")[0])
        if not isinstance(top, _Stub):
            f = sys._getframe(1)
            while f is not None and "importlib" in f.f_code.co_filename:
                f = f.f_back
            if f is None or "/sglang/" not in f.f_code.co_filename:
                return None  # only what SGLang's own modules import (and its stubs' parts) is stubbed
        for f in sys.meta_path:
            if f is self:
                continue
            try:
                spec = f.find_spec(name, path, target)
            except Exception:
                spec = None
            if spec is not None:
                return None
        return importlib.machinery.ModuleSpec(name, self, is_package=True)
    def create_module(self, spec):
        return _Stub(spec.name)
    def exec_module(self, module):
        pass

# libraries that probe for optional packages decide with the real environment first (a stub
# would make transformers believe torchvision is installed)
try:
    import transformers
    from transformers import AutoConfig, AutoProcessor, AutoTokenizer  # noqa: F401
    from transformers.utils import import_utils as _iu
    # an older SGLang registers configs that a newer transformers already ships (qwen3_asr):
    # registering again is allowed here, the parser does not use them
    for _auto in (transformers.AutoConfig, getattr(transformers, "AutoProcessor", None),
                  getattr(transformers, "AutoImageProcessor", None), getattr(transformers, "AutoTokenizer", None)):
        if _auto is not None and hasattr(_auto, "register"):
            _orig = _auto.register
            def _register(*a, _orig=_orig, **k):
                k["exist_ok"] = True
                try:
                    return _orig(*a, **k)
                except TypeError:
                    k.pop("exist_ok", None)
                    try:
                        return _orig(*a, **k)
                    except ValueError:
                        return None
            _auto.register = _register
    for _n in dir(_iu):
        if _n.startswith("is_") and _n.endswith("_available"):
            try:
                getattr(_iu, _n)()
            except Exception:
                pass
except Exception:
    pass
if os.environ.get("MC_STUB_MISSING") == "1":
    sys.meta_path.append(_Finder())
from sglang.srt.server_args import ServerArgs
p = argparse.ArgumentParser()
ServerArgs.add_cli_args(p)
out = []
for a in p._actions:
    opts = [o for o in a.option_strings if o.startswith("--")]
    if not opts:
        continue
    cls = type(a).__name__
    text = " ".join(str(getattr(a, k, "") or "") for k in ("help", "error_message", "new_flag"))
    dep = cls.startswith("Deprecated") or bool(re.search(r"\bdeprecated\b", str(a.help or ""), re.I))
    new = getattr(a, "new_flag", None)
    if new is None and dep:
        m = re.search(r"(?:use|Use|replaced by|instead use|Please use)\s+['`\"]?(--[a-z0-9-]+)", text)
        new = m.group(1) if m else None
    out.append({"options": opts, "dest": a.dest, "deprecated": dep, "new": new,
                "error": bool(getattr(a, "error_message", None))})
print(json.dumps(out))
'''


def flags_of(version: str, wheels: Path, python: str) -> list[dict]:
    whl = next((p for p in wheels.glob(f"sglang-{version}-*.whl")), None)
    if whl is None:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", f"sglang=={version}", "-d", str(wheels),
                        "-q"], check=True)
        whl = next(wheels.glob(f"sglang-{version}-*.whl"))
    with tempfile.TemporaryDirectory() as d:
        with zipfile.ZipFile(whl) as z:
            for n in z.namelist():
                if n.startswith("sglang/") and n.endswith(".py"):
                    z.extract(n, d)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([d, str(STUB)]))
        errors = []
        # the first venv whose libraries that version's import chain accepts; then again with
        # the third-party modules it lacks stubbed
        for stub in ("0", "1"):
            for py in python:
                r = subprocess.run([py, "-c", CHILD], env=dict(env, MC_STUB_MISSING=stub), capture_output=True,
                                   text=True, timeout=600, cwd=d)
                if r.returncode == 0:
                    return json.loads(r.stdout.strip().splitlines()[-1])
                errors.append(f"{py}: {r.stderr[-1500:]}")
        raise SystemExit(f"sglang {version}: " + "\n".join(errors))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", required=True, action="append",
                    help="python of a venv with SGLang's dependencies (repeat: each is tried in turn)")
    ap.add_argument("--wheels", default="/tmp/sgl-wheels", type=Path)
    args = ap.parse_args()
    args.wheels.mkdir(parents=True, exist_ok=True)
    accepted: dict[str, list[str]] = {}
    deprecated: dict[str, dict[str, str | None]] = {}
    for v in VERSIONS:
        acts = flags_of(v, args.wheels, args.python)
        accepted[v] = sorted({o for a in acts if not a["error"] for o in a["options"]})
        deprecated[v] = {o: a["new"] for a in acts if a["deprecated"] for o in a["options"]}
        print(v, len(accepted[v]), "flags,", len(deprecated[v]), "deprecated", file=sys.stderr)
    src = ('"""The launch flags each SGLang release accepts and which it marks deprecated, read from\n'
           "SGLang's own parsers (``ServerArgs.add_cli_args``, ``srt/server_args.py``; 0.5.23's\n"
           "deprecation actions in ``srt/arg_groups/argparse_actions.py``). Generated by\n"
           "``scripts/gen_flag_table.py``; do not edit.\n\n"
           "``ACCEPTED[version]``: sorted option strings (``--flag``) the parser takes without\n"
           "error; a flag whose action errors (0.5.23 ``DeprecatedAction`` with an error message)\n"
           "is not accepted. ``DEPRECATED[version]``: flag -> the replacement SGLang names (None\n"
           'when it names none)."""\n\n'
           f"VERSIONS = {VERSIONS!r}\n\n"
           f"ACCEPTED: dict[str, tuple[str, ...]] = {pprint.pformat({v: tuple(f) for v, f in accepted.items()}, width=110, compact=True)}\n\n"
           f"DEPRECATED: dict[str, dict[str, str | None]] = {pprint.pformat(deprecated, width=110, compact=True)}\n")
    OUT.write_text(src)
    print(f"wrote {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
