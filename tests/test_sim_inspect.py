"""``mambaconsole inspect LOG --json`` on the sim's logs gives back the sim's own ground truth
(memory items, concurrency, accept lengths, outcome) for each seed outcome, both versions.

The simulator writes what it modelled to its truth file; ``inspect`` only reads the log.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys

import pytest

from mambaconsole.sim import demo

GIB = 1 << 30
VERSIONS = ["0.5.11", "0.5.23"]


def gb(n_bytes: int) -> float:
    return round(n_bytes / GIB, 2)


def inspect(path) -> dict:
    out = subprocess.run([sys.executable, "-m", "mambaconsole", "inspect", str(path), "--json"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.mark.parametrize("version", VERSIONS)
def test_inspect_ready_run(sim_process, free_port, version):
    run = sim_process(version, demo.working_argv(version, port=free_port), seed=3)
    run.wait_for("The server is fired up and ready to roll!")
    run.wait_for("Decode batch")
    run.stop()
    truth, mem = run.truth(), run.truth()["memory"]
    r = inspect(run.log)
    assert r["kind"] == "log" and r["boots"] == 1
    assert truth["outcome"] == r["outcome"] == "ready"
    assert r["failure"] is None
    m = r["memory_gb"]
    assert m["weights"] == gb(mem["weight_bytes"])
    assert m["kv_cache"] == pytest.approx(gb(mem["k_bytes"]) + gb(mem["v_bytes"]))
    assert m["mamba_conv"] == gb(mem["conv_state_bytes"])
    assert m["mamba_ssm"] == gb(mem["ssm_state_bytes"])
    assert m["mamba_intermediate"] == pytest.approx(gb(mem["intermediate_ssm_bytes"]) + gb(mem["intermediate_conv_bytes"]))
    assert m["cuda_graph"] == gb(mem["graph_bytes"])
    assert m["avail_after_load"] == gb(mem["pre_load_free"] - mem["weight_bytes"])
    assert r["mamba_slots"] == mem["max_mamba_cache_size"] == 24
    assert r["concurrency"]["requested"] == truth["resolved"]["max_running_requests"] == 16
    assert r["concurrency"]["effective"] == mem["max_running_requests"] == 24 // 5
    spec = r["spec"]
    assert spec["enabled"] is True and spec["collapsed"] is False
    assert spec["batches"] == truth["decode_lines"] == len(truth["accept_lens"])
    assert spec["mean_accept_len"] == pytest.approx(statistics.fmean(truth["accept_lens"]), abs=1e-3)
    assert r["last_decode"]["accept_len"] == truth["accept_lens"][-1]
    strategy = "mamba_scheduler_strategy" if version == "0.5.11" else "mamba_radix_cache_strategy"
    assert r["server_args"][strategy] == truth["resolved"][strategy]


@pytest.mark.parametrize("version", VERSIONS)
def test_inspect_oom_run(sim_process, free_port, version):
    run = sim_process(version, demo.first_failing_argv(version, port=free_port))
    run.wait()
    truth = run.truth()
    r = inspect(run.log)
    assert truth["outcome"] == r["outcome"] == "oom"
    f = r["failure"]
    assert f["exception"] == "torch.OutOfMemoryError" and f["message"] == truth["error"]["message"]
    assert f["phase"] == "startup"  # after weights loaded, while building the pools
    assert r["memory_gb"]["weights"] == gb(truth["memory"]["weight_bytes"])
    if version == "0.5.11":
        assert r["memory_gb"]["mamba_total"] is None  # the Mamba cache line never came
    else:  # 0.5.23's joint solve fits the Mamba pool; the KV cache runs out
        assert truth["error"]["allocation"] in ("k_buffer", "v_buffer")
        assert r["mamba_slots"] == truth["memory"]["max_mamba_cache_size"]


@pytest.mark.parametrize("version", VERSIONS)
def test_inspect_not_enough_memory_run(sim_process, free_port, version):
    # 0.5.11 at 0.6: the Mamba pool takes its ratio share, the KV cache gets 0 tokens. 0.5.23 at
    # 0.55: 95.45 x 0.55 - 51.2 = 1.3 GiB left, whose Mamba share (0.62 GiB) is under the 5
    # slots (0.72 GiB) the joint solve needs: no Mamba slot at all
    fraction, message = {"0.5.11": ("0.6", "Not enough memory. Please try to increase --mem-fraction-static."),
                         "0.5.23": ("0.55", "Not enough GPU memory for hybrid (mamba/linear-attention) state cache")}[version]
    run = sim_process(version, demo.first_failing_argv(version, port=free_port) + ["--mem-fraction-static", fraction])
    run.wait()
    r = inspect(run.log)
    assert run.truth()["outcome"] == "not_enough_memory"
    assert r["outcome"] == "oom" and r["failure"]["exception"] == "RuntimeError"
    assert r["failure"]["message"].startswith(message)


@pytest.mark.parametrize("version", VERSIONS)
def test_inspect_validation_error_run_exception(sim_process, free_port, version):
    run = sim_process(version, demo.no_buffer_argv(version, port=free_port))
    run.wait()
    truth = run.truth()
    r = inspect(run.log)
    assert (r["failure"]["exception"], r["failure"]["message"]) == (truth["error"]["type"], truth["error"]["message"])
    assert r["memory_gb"]["weights"] is None


@pytest.mark.parametrize("version", VERSIONS)
def test_inspect_validation_error_is_an_arg_error(sim_process, free_port, version):
    run = sim_process(version, demo.no_buffer_argv(version, port=free_port))
    run.wait()
    r = inspect(run.log)
    assert run.truth()["outcome"] == "validation_error"
    assert r["outcome"] == "arg_error" and r["failure"]["phase"] == "args"


def test_inspect_argparse_error_run(sim_process, free_port):
    run = sim_process("0.5.23", demo.base_argv("0.5.23", port=free_port) + ["--mamba-scheduler-strategy", "extra_buffer"])
    assert run.wait() == 2
    r = inspect(run.log)
    assert run.truth()["outcome"] == "arg_error" == r["outcome"]
    assert r["failure"]["message"] == "unrecognized arguments: --mamba-scheduler-strategy extra_buffer"
