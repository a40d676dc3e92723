"""The sim's logs read back by mambaconsole's own SGLang log parser give the sim's ground truth.

The simulator writes what it modelled (memory plan in bytes, every accept length it printed,
the outcome) to its truth file; the parser only sees the log text. Both versions, every
outcome of the seed scenario.
"""

from __future__ import annotations

import signal

import pytest

from mambaconsole.sglang import events as ev
from mambaconsole.sim import demo

GIB = 1 << 30
VERSIONS = ["0.5.11", "0.5.23"]


def gb(n_bytes: int) -> float:
    return round(n_bytes / GIB, 2)


def parse(run) -> list:
    return ev.parse_text(run.text())


def of(events, cls) -> list:
    return [e for e in events if isinstance(e, cls)]


@pytest.mark.parametrize("version", VERSIONS)
def test_ready_run_memory_and_acceptance(sim_process, free_port, version):
    run = sim_process(version, demo.working_argv(version, port=free_port), seed=7)
    run.wait_for("The server is fired up and ready to roll!")
    run.wait_for("Decode batch")
    assert run.stop() == -signal.SIGTERM
    truth = run.truth()
    mem = truth["memory"]
    events = parse(run)
    (dump,) = of(events, ev.ServerArgsDump)
    assert dump.form == ("dataclass" if version == "0.5.11" else "dict") and dump.complete
    strategy = "mamba_scheduler_strategy" if version == "0.5.11" else "mamba_radix_cache_strategy"
    assert dump.args[strategy] == truth["resolved"][strategy] == "extra_buffer"
    assert dump.args["max_mamba_cache_size"] == 24
    (weights,) = of(events, ev.WeightsLoaded)
    assert weights.mem_usage_gb == gb(mem["weight_bytes"])
    assert weights.arch == "Qwen3_5ForConditionalGeneration"
    (mamba,) = of(events, ev.MambaCacheAllocated)
    assert mamba.max_mamba_cache_size == mem["max_mamba_cache_size"] == 24
    assert (mamba.conv_gb, mamba.ssm_gb) == (gb(mem["conv_state_bytes"]), gb(mem["ssm_state_bytes"]))
    assert mamba.intermediate_ssm_gb == gb(mem["intermediate_ssm_bytes"])
    assert mamba.intermediate_conv_gb == gb(mem["intermediate_conv_bytes"])
    (kv,) = of(events, ev.KVCacheAllocated)
    assert kv.tokens == mem["kv_tokens"]
    assert (kv.k_gb, kv.v_gb) == (gb(mem["k_bytes"]), gb(mem["v_bytes"]))
    (summary,) = of(events, ev.ReadySummary)
    assert summary.max_total_num_tokens == mem["kv_tokens"]
    assert summary.max_running_requests == mem["max_running_requests"]
    ends = of(events, ev.GraphCaptureEnd)
    assert len(ends) == 1 and ends[0].mem_usage_gb == gb(mem["graph_bytes"])
    assert of(events, ev.ServerReady)
    decodes = of(events, ev.DecodeBatch)
    assert [d.accept_len for d in decodes] == truth["accept_lens"]
    assert len(decodes) == truth["decode_lines"] >= 1
    assert not [e for e in events if isinstance(e, ev.Traceback)]


@pytest.mark.parametrize("version", VERSIONS)
def test_oom_run(sim_process, free_port, version):
    run = sim_process(version, demo.first_failing_argv(version, port=free_port))
    run.wait()
    truth = run.truth()
    assert truth["outcome"] == "oom"
    events = parse(run)
    # Where the seed's first try runs out: 0.5.11 sizes the Mamba pool from the ratio alone and
    # its extra_buffer pool does not fit; 0.5.23 solves Mamba and KV jointly
    # (mem_cache/kv_cache_configurator.py), so the Mamba pool is allocated and the KV buffers fail.
    failed_in = {"0.5.11": "mamba", "0.5.23": "kv"}[version]
    assert truth["memory"]["failed"]["phase"] == failed_in
    assert bool(of(events, ev.MambaCacheAllocated)) == (failed_in != "mamba")
    assert not of(events, ev.KVCacheAllocated)
    (tb,) = of(events, ev.Traceback)
    assert tb.origin == "Scheduler" and tb.complete and tb.oom == "torch"
    assert tb.exc_type == "torch.OutOfMemoryError"
    assert tb.exc_message == truth["error"]["message"]
    assert f"Tried to allocate {truth['error']['bytes'] / GIB:.2f} GiB." in tb.exc_message
    assert tb.frames[-1].file.endswith("sglang/srt/mem_cache/memory_pool.py")
    (quit_,) = of(events, ev.SigquitReceived)
    assert quit_.phase == "launch"
    assert len(of(events, ev.KillProcessTree)) == (1 if version == "0.5.23" else 0)


@pytest.mark.parametrize("version", VERSIONS)
def test_validation_error_run(sim_process, free_port, version):
    run = sim_process(version, demo.no_buffer_argv(version, port=free_port))
    assert run.wait() == 1
    truth = run.truth()
    assert truth["outcome"] == "validation_error" and truth["exit_code"] == 1
    events = parse(run)
    (tb,) = of(events, ev.Traceback)
    assert tb.complete and tb.origin is None
    assert (tb.exc_type, tb.exc_message) == (truth["error"]["type"], truth["error"]["message"])
    assert not of(events, ev.ServerArgsDump)  # resolution failed before the dump


@pytest.mark.parametrize("version", VERSIONS)
def test_not_enough_memory_run(sim_process, free_port, version):
    # 0.5 x 96 GiB is less than the 51 GiB of weights: no room for any pool in either version.
    argv = demo.first_failing_argv(version, port=free_port) + ["--mem-fraction-static", "0.5"]
    run = sim_process(version, argv)
    run.wait()
    truth = run.truth()
    assert truth["outcome"] == "not_enough_memory" and truth["exit_code"] == 137
    (tb,) = of(parse(run), ev.Traceback)
    assert tb.oom == "sglang"
    # SGLang's own words: 0.5.11 model_executor/pool_configurator.py:41, 0.5.23 mem_cache/kv_cache_configurator.py:3051
    assert tb.exc_message.startswith({
        "0.5.11": "Not enough memory. Please try to increase --mem-fraction-static.",
        "0.5.23": "Loaded weights leave no GPU memory for the KV cache",
    }[version])


@pytest.mark.parametrize("version", ["0.5.11"])
def test_graph_capture_oom_run(sim_process, free_port, version):
    """A cap that fits the pools but leaves the graphs less than they take: the sim fails in
    decode graph capture as SGLang does, with the wrapping ``Exception: Capture cuda graph
    failed: ...`` (0.5.11 model_executor/cuda_graph_runner.py:716), not a KeyError of its own."""
    run = sim_process(version, demo.first_failing_argv(version, port=free_port) + ["--max-mamba-cache-size", "44"])
    run.wait()
    truth = run.truth()
    assert truth["outcome"] == "oom" and truth["memory"]["failed"]["phase"] == "graph"
    events = parse(run)
    assert of(events, ev.MambaCacheAllocated) and of(events, ev.KVCacheAllocated)
    (tb,) = of(events, ev.Traceback)
    assert tb.origin == "Scheduler" and tb.complete
    assert tb.exc_type == "Exception" and tb.exc_message.startswith("Capture cuda graph failed: CUDA out of memory.")
    assert "Possible solutions:" not in tb.exc_message.splitlines()[0]
    assert tb.frames[-1].file.endswith("sglang/srt/model_executor/cuda_graph_runner.py")
    assert "KeyError" not in run.text()
