"""What SGLang does at model load with a ``--max-mamba-cache-size`` its argument check accepts
(:mod:`mambaconsole.sglang.load_checks`). The file:line each message cites is read off the real
SGLang source in the test venvs (tests/sglang_venvs.sh): the statement there is the check quoted."""

from __future__ import annotations

from pathlib import Path

import pytest

from fixtures.sglang_venvs import sglang_python
from mambaconsole.sglang.load_checks import max_mamba_cache_size_at_load as at_load


def source_line(version: str, rel: str, line: int) -> str:
    py = sglang_python(version)
    site = next(Path(py).parents[1].glob("lib/python3*/site-packages"))
    return (site / "sglang" / rel).read_text().splitlines()[line - 1]


@pytest.mark.parametrize("version, rel, line, statement", [
    ("0.5.23", "srt/mem_cache/kv_cache_configurator.py", 3392, "if get_schedule().max_mamba_cache_size <= 0:"),
    ("0.5.23", "srt/model_executor/pool_configurator.py", 95, "if self.max_total_num_tokens <= 0:"),
    ("0.5.11", "srt/model_executor/pool_configurator.py", 40, "if self.max_total_num_tokens <= 0:"),
    ("0.5.11", "srt/model_executor/model_runner_kv_cache_mixin.py", 94, "if server_args.max_mamba_cache_size is not None:"),
    ("0.5.11", "srt/model_executor/model_runner_kv_cache_mixin.py", 713, "max_num_reqs = min("),
])
def test_the_cited_lines_are_the_checks(version, rel, line, statement):
    assert source_line(version, rel, line).strip() == statement


def test_nonpositive_per_version():
    said = at_load("0", "0.5.23")
    assert "RuntimeError 'Not enough GPU memory for hybrid" in said and "max_mamba_cache_size=0" in said
    assert "kv_cache_configurator.py:3392" in said
    assert "does not check it" in at_load("-1", "0.5.11")
    # between the known versions: both, each named
    both = at_load("-1", "0.5.15")
    assert "0.5.23" in both and "0.5.11" in both
    assert at_load("1", "0.5.23") is None and at_load("x", "0.5.23") is None


def test_a_pool_larger_than_the_gpu_even_at_one_byte_a_slot():
    gpu_mib = 98304.0  # 96 GiB
    over = 96 * 2**30 + 1  # one byte a slot: one byte more than the GPU
    assert "more than the GPU's 96.0 GiB" in at_load(str(over), "0.5.23", gpu_mib)
    assert "pool_configurator.py:95" in at_load(str(over), "0.5.23", gpu_mib)
    assert "pool_configurator.py:40" in at_load(str(over), "0.5.11", gpu_mib)
    assert at_load(str(96 * 2**30), "0.5.23", gpu_mib) is None  # fits at one byte a slot: not ours to say
    assert at_load(str(over), "0.5.23", None) is None  # the GPU's memory unknown: nothing claimed
    # split over 2 attention-DP shards: half the slots per GPU
    assert at_load(str(over), "0.5.23", gpu_mib, shards=2) is None
