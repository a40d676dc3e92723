"""The product's readers on the committed real output of SGLang 0.5.23 serving on CPU
(``../shared/reference/cpu-sglang/real-0.5.23/``: server logs, ``/server_info``, ``/metrics``).
Expected values are read off those files, not off the product."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SHARED

REAL = SHARED / "reference" / "cpu-sglang" / "real-0.5.23"

pytestmark = pytest.mark.skipif(not REAL.is_dir(), reason=f"reference output not found: {REAL}")


def _inspect(path, *extra) -> str:
    p = subprocess.run([sys.executable, "-m", "mambaconsole", "inspect", str(path), *extra], check=False,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return p.stdout


# the plain server's log ends with SIGTERM and "Gracefully exiting..."; the hybrid's while serving
@pytest.mark.parametrize(("log", "outcome"), [("qwen3_server.log", "exited"), ("qnext_server.log", "ready")])
def test_inspect_reads_the_deprecation_warning_as_sglang_wrote_it(log, outcome):
    """0.5.23's DeprecatedStoreTrueAction names a free-text replacement; inspect said
    'use None' because it only took a single flag name there."""
    text = (REAL / log).read_text()
    assert "'--disable-cuda-graph' is deprecated and will be removed in a future release. " \
           "Use '--cuda-graph-backend-{decode,prefill}=disabled' instead." in text
    out = _inspect(REAL / log)
    assert "use None" not in out
    assert "--disable-cuda-graph is deprecated; use --cuda-graph-backend-{decode,prefill}=disabled" in out
    data = json.loads(_inspect(REAL / log, "--json"))
    assert data["outcome"] == outcome


def test_a_failure_says_where_sglang_raised_it(tmp_path):
    """The traceback's innermost SGLang frame, relative to the sglang/ folder, is the failure's
    ``where`` (inspect --json and text). Input: the real 0.5.23 refusal's traceback lines, as
    the real server printed them (tests/data/real-0.5.23-extra-buffer-refusal.log)."""
    log = Path(__file__).parent / "data" / "real-0.5.23-extra-buffer-refusal.log"
    frames = [ln for ln in log.read_text().splitlines() if ln.strip().startswith('File "')]
    last = [ln for ln in frames if "/sglang/" in ln][-1]  # File ".../sglang/srt/...py", line N, in F
    path = last.split('"')[1]
    want = f"{path[path.rfind('/sglang/') + 1:]}:{last.split('line ')[1].split(',')[0]} in {last.rsplit(' in ', 1)[1]}"
    assert want == "sglang/srt/arg_groups/mamba_hook.py:120 in validate_mamba_extra_buffer"
    data = json.loads(_inspect(log, "--json"))
    assert data["outcome"] == "arg_error"
    assert data["failure"]["where"] == want
    assert f"raised at {want}" in _inspect(log)
