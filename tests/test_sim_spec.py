"""The sim's bundled SGLang flag specs agree with the real parser of SGLang 0.5.11 and 0.5.23.

Uses the SGLang test venvs through ``tests/fixtures/sglang_venvs.py`` (built by
``tests/sglang_venvs.sh``); skipped when they are not there. The spec is regenerated from the real parser with the same script that
made it (``scripts/gen_sim_spec.py --emit``) and compared whole; then a set of launch commands is
parsed by the real parser and by the sim's rebuilt one, and the namespaces compared.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from mambaconsole.sim import demo
from mambaconsole.sim.flags import build_parser, load_spec

ROOT = Path(__file__).resolve().parents[1]
GEN = ROOT / "scripts" / "gen_sim_spec.py"

pytestmark = pytest.mark.sglang
venvs = pytest.importorskip("fixtures.sglang_venvs", reason="the SGLang test venv fixture is not here")

_PARSE = r"""
import argparse, json, sys, logging
logging.disable(logging.CRITICAL)
from sglang.srt.server_args import ServerArgs
out = []
for argv in json.loads(sys.stdin.read()):
    p = argparse.ArgumentParser(prog="sglang serve")
    ServerArgs.add_cli_args(p)
    try:
        ns = p.parse_args(argv)
        out.append({"ok": True, "ns": {k: v for k, v in vars(ns).items()}})
    except SystemExit as e:
        out.append({"ok": False, "code": e.code})
print(json.dumps(out, default=repr))
"""


def venv_python(version: str) -> Path:
    return venvs.sglang_python(version)  # skips the test when that venv is not built


def run_real(py: Path, args: list[str], stdin: str | None = None) -> str:
    env = venvs.sglang_env()
    env["PYTHONWARNINGS"] = "ignore"
    proc = subprocess.run([str(py), *args], input=stdin, capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


@pytest.mark.parametrize("version", ["0.5.11", "0.5.23"])
def test_bundled_spec_is_the_real_parser(version):
    real = json.loads(run_real(venv_python(version), [str(GEN), "--emit"]))
    bundled = load_spec(version)
    assert real["sglang_version"] == version
    assert real["prog"] == bundled["prog"] == "sglang serve"
    assert [a["option_strings"] for a in real["actions"]] == [a["option_strings"] for a in bundled["actions"]]
    for r, b in zip(real["actions"], bundled["actions"]):
        for key in ("dest", "default", "nargs", "const", "type", "required", "action", "metavar"):
            assert r[key] == b[key], (r["option_strings"], key)
        if r["choices"] is not None and b["choices"] is not None:
            assert sorted(map(repr, r["choices"])) == sorted(map(repr, b["choices"])), r["option_strings"]
        else:
            assert r["choices"] == b["choices"], r["option_strings"]
    assert real["fields"] == bundled["fields"]


@pytest.mark.parametrize("version", ["0.5.11", "0.5.23"])
def test_rebuilt_parser_parses_like_the_real_one(version):
    argvs = [
        demo.first_failing_argv(version),
        demo.working_argv(version),
        demo.no_buffer_argv(version) + ["--disable-overlap-schedule", "--tp", "1", "--disable-radix"],
        ["--model", "m", "--mem-fraction-static", "0.8", "--chunked-prefill-size", "4096", "--enable-metrics",
         "--decode-log-interval", "10", "--context-length", "32768"],
        ["--model-path", "m", "--mamba-scheduler-strategy", "extra_buffer"],
        ["--model-path", "m", "--mamba-radix-cache-strategy", "bogus"],
        ["--model-path", "m", "--no-such-flag"],
        ["--tp-size", "2"],
    ]
    real = json.loads(run_real(venv_python(version), ["-c", _PARSE], json.dumps(argvs)))
    parser, source = build_parser(version, prefer_real=False)
    assert source == "bundled"
    for argv, want in zip(argvs, real):
        try:
            ns = vars(parser.parse_args(argv))
            got = {"ok": True, "ns": json.loads(json.dumps(ns, default=repr))}
        except SystemExit as e:
            got = {"ok": False, "code": e.code}
        assert got == want, argv
