"""The memory budget model (issue 18): SGLang's sizing predicted before the model loads.

Expected values are computed here by hand from the configs and SGLang's formulas, or read off
real SGLang 0.5.23 logs (``shared/reference/cpu-sglang/real-0.5.23``), never from the code."""

from __future__ import annotations

import ast
import json
import re

import pytest

from conftest import SHARED
from mambaconsole.sglang import budget as B
from mambaconsole.sim import demo, flags as simflags
from mambaconsole.sim.model import QWEN36_27B, SimGPU
from mambaconsole.sim.resolve import resolve

GiB = 1 << 30
CPU = SHARED / "reference" / "cpu-sglang"

#: Qwen3.6-27B's text_config as published (the fields SGLang's sizing reads)
QWEN36_CONFIG = {
    "architectures": ["Qwen3_5ForConditionalGeneration"], "model_type": "qwen3_5",
    "text_config": {"num_hidden_layers": 64, "full_attention_interval": 4, "num_key_value_heads": 4,
                    "num_attention_heads": 24, "hidden_size": 5120, "head_dim": 256,
                    "linear_num_key_heads": 16, "linear_key_head_dim": 128, "linear_num_value_heads": 48,
                    "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4,
                    "max_position_embeddings": 262144, "mamba_ssm_dtype": "float32", "torch_dtype": "bfloat16"},
}


def test_geometry_of_qwen36_from_its_config():
    s = B.ModelShape.from_config(QWEN36_CONFIG)
    assert s.hybrid and len(s.linear_layer_ids) == 48 and len(s.full_layer_ids) == 16
    assert s.full_layer_ids[:2] == (3, 7)
    # conv: (48*128 + 2*16*128) = 10240 channels x 3 cached inputs x 2 B x 48 layers
    assert s.conv_bytes_per_slot() == 10240 * 3 * 2 * 48 == 2_949_120
    # SSM: 48 heads x 128 x 128 x 4 B (float32) x 48 layers
    assert s.ssm_bytes_per_slot() == 48 * 128 * 128 * 4 * 48 == 150_994_944
    # KV: 4 heads x (256 + 256) x 16 layers x 2 B
    assert s.kv_cell_bytes() == 65_536
    # TP 2 halves heads and channels
    assert s.mamba_slot_bytes(2) * 2 == s.mamba_slot_bytes(1)
    assert s.kv_cell_bytes(8) == 1 * 512 * 16 * 2  # 4 KV heads over 8 ranks: replicated, 1 each


def test_layer_types_win_over_the_interval():
    cfg = json.loads((CPU / "qwen3next-tiny.config.json").read_text())
    cfg["layer_types"] = ["linear_attention", "full_attention", "linear_attention", "linear_attention"]
    s = B.ModelShape.from_config(cfg)
    assert s.full_layer_ids == (1,) and s.linear_layer_ids == (0, 2, 3)


def test_config_without_kv_fields_is_a_clear_error():
    with pytest.raises(B.BudgetError, match="num_hidden_layers"):
        B.ModelShape.from_config({"architectures": ["X"]})


def _log_facts(log: str) -> tuple[dict, float]:
    """(server_args dict, free GiB before the weights) from a real log."""
    args = ast.literal_eval(re.search(r"server_args=(\{.*\})\s*$", log, re.M).group(1))
    free = float(re.search(r"Load weight begin\. avail mem=([\d.]+) GB", log).group(1))
    return args, free


@pytest.mark.parametrize("name, config, logged", [
    # each line read off the log: KV '#tokens', 'max_mamba_cache_size', 'max_running_requests'
    ("qnext_server.log", "qwen3next-tiny.config.json", (4096, 32, 8)),
    ("qwen3_server.log", "qwen3-tiny.config.json", (4096, None, 2048)),
])
def test_real_sglang_0_5_23_cpu_logs(name, config, logged):
    log = (CPU / "real-0.5.23" / name).read_text()
    args, free = _log_facts(log)
    shape = B.ModelShape.from_config(json.loads((CPU / config).read_text()))
    facts = B.NodeFacts(gpu_total_bytes=int(free * GiB), gpu_free_bytes=int(free * GiB), weight_bytes=0)
    b = B.predict(args, shape, facts, B.rules_for("0.5.23"))
    assert b.fits, b.verdict()
    assert (b.kv_tokens, b.max_mamba_cache_size, b.max_running_requests) == logged
    tokens = int(re.search(r"#tokens: (\d+)", log).group(1))
    assert tokens == b.kv_tokens


def _seed(version: str, argv: list[str]) -> tuple[dict, B.ModelShape, B.NodeFacts]:
    gpu = SimGPU.parse("RTX PRO 6000 Blackwell,96")
    parser, _ = simflags.build_parser(version)
    r = resolve(version, simflags.field_values(version, parser.parse_args(argv)), QWEN36_27B, gpu)
    facts = B.NodeFacts(gpu_total_bytes=96 * GiB, gpu_free_bytes=None, weight_bytes=int(51.20 * GiB))
    return r.fields, B.ModelShape.from_config(QWEN36_CONFIG), facts


def test_seed_0_5_11_by_hand():
    f, shape, facts = _seed("0.5.11", demo.first_failing_argv("0.5.11"))
    slot = 153_944_064
    pre = (96 * GiB - int(0.55 * GiB)) / GiB
    rest = pre - 51.20 - pre * (1 - f["mem_fraction_static"]) - slot * 16 * 4 / GiB
    size = int(rest * 0.9 / 1.9 * GiB // slot)
    tokens = int((rest - size * slot / GiB) * GiB) // 65536
    b = B.predict(f, shape, facts, B.rules_for("0.5.11"))
    assert (b.max_mamba_cache_size, b.kv_tokens) == (size, tokens)
    assert b.max_running_requests == min(16, size // 5)  # extra_buffer with overlap: 3 + 2 slots
    # real SGLang's arithmetic: the pools fit the static share; the reserve is left to graphs
    assert b.fits


def test_seed_scenario_on_the_simulated_rules():
    sim = B.rules_for("0.5.11", simulated=True)
    f, shape, facts = _seed("0.5.11", demo.first_failing_argv("0.5.11"))
    b = B.predict(f, shape, facts, sim)
    assert not b.fits and b.fails_at == "mamba_pool"
    # the example: "out of memory allocating the Mamba pool: needs 9.6 GiB, 8.0 free"
    assert b.verdict() == "out of memory allocating the Mamba pool: needs 9.6 GiB, 8.0 free"
    f2, _, _ = _seed("0.5.11", demo.working_argv("0.5.11"))
    ok = B.predict(f2, shape, facts, sim)
    assert ok.fits and ok.max_mamba_cache_size == 24 and ok.max_running_requests == 24 // 5
    advice = B.advise(f, shape, facts, sim)
    sizes = [a for a in advice if "--max-mamba-cache-size" in a.flags]
    assert sizes and sizes[0].max_running_requests == int(sizes[0].flags["--max-mamba-cache-size"]) // 5
    # the largest that leaves SGLang's graph reserve: one more slot fails or eats into it
    n = int(sizes[0].flags["--max-mamba-cache-size"])
    assert sizes[0].risk is None and B.predict({**f, "max_mamba_cache_size": n}, shape, facts, sim).risk is None
    more = B.predict({**f, "max_mamba_cache_size": n + 1}, shape, facts, sim)
    assert not more.fits or more.risk is not None
    assert B.plan_json(b, advice, facts)["fails_at"] == "mamba_pool"


def test_weights_larger_than_the_gpu():
    f, shape, _ = _seed("0.5.23", demo.working_argv("0.5.23"))
    facts = B.NodeFacts(gpu_total_bytes=48 * GiB, gpu_free_bytes=None, weight_bytes=int(51.2 * GiB))
    b = B.predict(f, shape, facts, B.rules_for("0.5.23"))
    assert b.fails_at == "weights" and b.need_bytes == int(51.2 * GiB)


def test_explicit_mamba_size_too_large_for_0_5_11():
    f, shape, facts = _seed("0.5.11", demo.working_argv("0.5.11"))
    b = B.predict({**f, "max_mamba_cache_size": 400}, shape, facts, B.rules_for("0.5.11"))
    # 400 slots x 146.8 MiB = 57.3 GiB, more than the static budget left after the weights and
    # the speculative reserve: 0.5.11 raises while sizing (MemoryPoolConfig), before allocating
    assert b.fails_at == "mamba_pool"
    assert b.error.startswith("RuntimeError: Not enough memory. Please try to increase --mem-fraction-static")
    assert b.need_bytes == 400 * 153_944_064
    pre = (96 * GiB - int(0.55 * GiB)) / GiB
    rest = pre - int(51.2 * GiB) / GiB - pre * (1 - 0.9) - 153_944_064 * 16 * 4 / GiB
    assert b.free_bytes == int(rest * GiB)


def test_rules_by_version():
    assert B.rules_for("0.5.13.post1").version == "0.5.11"
    assert B.rules_for("0.5.20").version == "0.5.23"
    assert B.rules_for(None).version == "0.5.23"


def _inspect_json(*args: str) -> dict:
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "mambaconsole", "inspect", *args, "--json"], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_inspect_predicts_a_real_boot_beside_its_log():
    r = _inspect_json(str(CPU / "real-0.5.23" / "qnext_server.log"), "--config", str(CPU / "qwen3next-tiny.config.json"))
    rows = {what: (p, logged) for what, p, logged in r["prediction"]["rows"]}
    # logged: 'max_mamba_cache_size: 32', '#tokens: 4096', 'max_running_requests=8'
    assert rows["max_mamba_cache_size"] == (32, 32)
    assert rows["KV #tokens"] == (4096, 4096)
    assert rows["max_running_requests"] == (8, 8)
    assert rows["outcome"] == ("fits", "ready")
    assert r["prediction"]["rules"] == "0.5.23"


def test_inspect_prediction_needs_a_log_with_the_dump(tmp_path):
    import subprocess
    import sys

    log = tmp_path / "x.log"
    log.write_text("[2026-12-01 13:25:19] Load weight begin. avail mem=19.98 GB\n")
    out = subprocess.run([sys.executable, "-m", "mambaconsole", "inspect", str(log), "--kind", "log", "--config",
                          str(CPU / "qwen3next-tiny.config.json")], capture_output=True, text=True, timeout=120)
    assert out.returncode != 0 and "no ServerArgs dump" in out.stderr


def test_advice_for_a_fit_with_a_graph_risk_removes_the_risk():
    # the demo's working edit fits, but leaves 8.8 GiB for graphs and activations where
    # SGLang's own default reserve on a 96 GiB GPU is 10 GiB + 1.5 MiB x 8192 tokens + 0.125 GiB
    sim = B.rules_for("0.5.11", simulated=True)
    f, shape, facts = _seed("0.5.11", demo.working_argv("0.5.11"))
    b = B.predict(f, shape, facts, sim)
    assert b.fits and b.risk is not None
    assert b.graph_range[1] == int((max(512 + 8192 * 1.5 + 1 / 8 * 1024, 10 * 1024)) * (1 << 20))
    advice = B.advise(f, shape, facts, sim)
    assert advice
    flag_field = {"--mem-fraction-static": ("mem_fraction_static", float),
                  "--max-mamba-cache-size": ("max_mamba_cache_size", int),
                  "--mamba-full-memory-ratio": ("mamba_full_memory_ratio", float)}
    for a in advice:  # each advised change fits without the risk (the old advice: a cap of 44)
        (flag, value), = a.flags.items()
        name, cast = flag_field[flag]
        fixed = B.predict({**f, name: cast(value)}, shape, facts, sim)
        assert fixed.fits and fixed.risk is None, (a, fixed.risk)
    caps = [int(a.flags["--max-mamba-cache-size"]) for a in advice if "--max-mamba-cache-size" in a.flags]
    assert all(c < 24 for c in caps)  # on the simulator's rules a smaller pool frees its tracking rows
