"""The ServerArgs pane when the resolution failed and on internal fields, from real inputs: the
real 0.5.23 resolver's answer when it cannot import sglang (no torchvision stub: the error the
console got on a real CPU server before it used the run's env) and the real server's
``/server_info`` (../shared/reference/cpu-sglang/real-0.5.23/qwen3_server_info.json).

Before: every default the live server reported showed as ``None → 4096 live`` ("~30 differ"), and
ServerArgs fields no flag sets were listed as flags (``---speculative-draft-quantization-
explicitly-set``, ``--uses-mamba-radix-cache``)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import SHARED

from fixtures.sglang_venvs import MODELS, sglang_python
from mambaconsole.state import ConsoleState, Resolution, RunInfo, RunsListed, ServerInfo
from mambaconsole.ui.args_pane import value_cell

INFO = SHARED / "reference" / "cpu-sglang" / "real-0.5.23" / "qwen3_server_info.json"

pytestmark = pytest.mark.sglang


@pytest.fixture(scope="module")
def failed_resolution():
    """The real resolver's answer without the stub on PYTHONPATH: SGLang's import error."""
    py = sglang_python("0.5.23")
    p = subprocess.run([sys.executable, "-m", "mambaconsole", "resolve", "--python", str(py), "--json", "--",
                        "--model-path", str(MODELS["qwen3-next"]), "--device", "cpu", "--max-total-tokens", "4096"],
                       check=False, capture_output=True, text=True, timeout=300)
    res = json.loads(p.stdout)
    assert res["error"]["type"] == "ModuleNotFoundError" and "torchvision" in res["error"]["message"]
    return res


def _state(res: dict, info: dict) -> ConsoleState:
    st = ConsoleState("h")
    st.apply(RunsListed((RunInfo("r1", log_path="/x", state="running"),), "r1"))
    st.apply(Resolution(res))
    st.apply(ServerInfo(info))
    return st


def test_a_failed_resolution_shows_live_values_as_live_never_as_differences(failed_resolution):
    info = json.loads(INFO.read_text())
    st = _state(failed_resolution, info)
    assert st.rows, "the argv's and default values are still listed"
    assert [r.flag for r in st.rows if r.disagrees] == []
    # a field the live server reports with another value than the parsed default: shown live
    row = next(r for r in st.rows if r.field == "chunked_prefill_size")
    assert row.value != info["chunked_prefill_size"]  # None parsed, 4096 live (real server_info)
    assert value_cell(row, None, {}).plain == f"{info['chunked_prefill_size']} live"


def test_only_real_flags_are_listed(failed_resolution):
    st = _state(failed_resolution, json.loads(INFO.read_text()))
    flags = [r.flag for r in st.rows]
    assert not [f for f in flags if f.startswith("---")]
    assert "--uses-mamba-radix-cache" not in flags and "--watermark-key" not in flags
    # every listed flag is an option of SGLang's parser (the resolver's own answer names them)
    fields = failed_resolution["fields"]
    assert all(fields[r.field]["option"] == r.flag for r in st.rows)
    assert "--max-total-tokens" in flags
