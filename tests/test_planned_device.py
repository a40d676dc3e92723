"""A planned device (issue 18): ``mambaconsole plan --gpu-memory-gib N --gpu-name G`` makes
SGLang's own resolution run as on that GPU, on a machine without it (this CPU-only one).

The resolver presents the device to SGLang through torch (``torch.cuda.*``, ``torch.version.cuda``),
``nvidia-smi`` queries and an import-only ``sgl_kernel`` stand-in; SGLang's code is untouched.
The expected values below are read off SGLang's source (file:line given at each), not off our
output: a CPU resolution gives other values (0.5.11 refuses ``extra_buffer`` on CPU:
``tests/data/sim/real-0.5.11-extra_buffer-cpu.txt``)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

import pytest

from fixtures.sglang_venvs import MODELS, ROOT, sglang_env, sglang_env_extra, sglang_python
from mambaconsole.commands.plan import gpu_capability, planned_device_of, render
from mambaconsole.errors import UsageError

GiB = 1 << 30
RTX_PRO_6000 = {"name": "NVIDIA RTX PRO 6000 Blackwell Server Edition", "total_bytes": 96 * GiB,
                "capability": [12, 0], "count": 1, "cuda_version": "12.8"}
H100 = {"name": "NVIDIA H100 80GB HBM3", "total_bytes": 80 * GiB, "capability": [9, 0], "count": 1,
        "cuda_version": "12.8"}


def seed_argv(version: str) -> list[str]:
    """The seed scenario's first launch (design.md §1), on the Qwen3.6-27B config."""
    strategy = "--mamba-scheduler-strategy" if version == "0.5.11" else "--mamba-radix-cache-strategy"
    return ["--model-path", str(MODELS["qwen3.6-hybrid"]), "--speculative-algorithm", "NEXTN",
            "--speculative-num-steps", "3", "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4",
            "--max-running-requests", "16", "--mem-fraction-static", "0.9", strategy, "extra_buffer"]


def resolve_on(version: str, device: dict, argv: list[str], tmp_path) -> dict:
    """``mambaconsole resolve --json`` with the planned ``device`` described by its flags."""
    env = [x for k, v in sglang_env_extra().items() for x in ("--env", f"{k}={v}")]
    gpu = ["--gpu-memory-gib", str(device["total_bytes"] / GiB), "--gpu-name", device["name"],
           "--gpu-capability", "%d.%d" % tuple(device["capability"]), "--cuda-version", device["cuda_version"]]
    out = subprocess.run([sys.executable, "-m", "mambaconsole", "resolve", "--json", "--python", str(sglang_python(version)),
                          *env, *gpu, "--", *argv], capture_output=True, text=True, timeout=280,
                         env={**sglang_env(), "MAMBACONSOLE_CONFIG": str(tmp_path / "none.toml")})
    assert out.returncode in (0, 1), out.stderr[-2000:]
    return json.loads(out.stdout)


def writer(field: dict) -> str | None:
    return field["writes"][-1]["function"] if field["writes"] else None


# --- the stand-ins, in a python with torch but no GPU --------------------------------------------

STANDINS = r"""
import importlib.util, json, subprocess, sys
spec = importlib.util.spec_from_file_location("resolver_agent", sys.argv[1])
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
notes = m.install_planned_device(json.loads(sys.argv[2]))
import torch
out = {"notes": notes, "available": torch.cuda.is_available(), "count": torch.cuda.device_count(),
       "capability": list(torch.cuda.get_device_capability()), "name": torch.cuda.get_device_name(0),
       "total": torch.cuda.get_device_properties(0).total_memory, "mem": list(torch.cuda.mem_get_info()),
       "cuda": torch.version.cuda}
def err(fn):
    try:
        fn()
    except BaseException as e:
        return type(e).__name__ + ": " + str(e)
out["mp_count"] = err(lambda: torch.cuda.get_device_properties(0).multi_processor_count)
out["second_gpu"] = err(lambda: torch.cuda.get_device_name(1))
out["smi"] = subprocess.run(["nvidia-smi", "--query-gpu=memory.total,compute_cap", "--format=csv,noheader,nounits"],
                            capture_output=True, text=True).stdout
out["smi_unknown"] = err(lambda: subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv"],
                                                capture_output=True, text=True, check=True))
import sgl_kernel
out["sgl_kernel"] = getattr(sgl_kernel, "__version__", None)
if out["sgl_kernel"] == "0+mambaconsole.planned":
    from sgl_kernel.scalar_type import scalar_types  # a submodule, imported at module level by SGLang
    out["attr"] = repr(scalar_types.uint4b8)
    out["call"] = err(lambda: sgl_kernel.fused_add_rmsnorm(1, 2))
out["tensor"] = err(lambda: torch.zeros(1, device="cuda"))
out["initialized"] = torch.cuda.is_initialized()
print(json.dumps(out))
"""


def standins(extra_pythonpath: str | None = None) -> dict:
    env = sglang_env()
    if extra_pythonpath:
        env["PYTHONPATH"] = f"{extra_pythonpath}:{env['PYTHONPATH']}"
    out = subprocess.run([str(sglang_python("0.5.23")), "-c", STANDINS, str(ROOT / "tui/mambaconsole/agent/resolver.py"),
                          json.dumps(RTX_PRO_6000)], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.splitlines()[-1])


@pytest.mark.sglang
@pytest.mark.timeout(200)
def test_the_device_torch_and_nvidia_smi_show():
    d = standins()
    assert (d["available"], d["count"], d["capability"], d["name"]) == (True, 1, [12, 0], RTX_PRO_6000["name"])
    assert d["total"] == 96 * GiB and d["mem"] == [96 * GiB, 96 * GiB] and d["cuda"] == "12.8"
    # what a planned device cannot know is an error naming it, never an invented value
    assert "multi_processor_count" in d["mp_count"] and "PlannedDeviceError" in d["mp_count"]
    assert "CUDA device 1" in d["second_gpu"]
    assert d["smi"] == "98304, 12.0\n"  # 96 GiB in MiB, as nvidia-smi prints it with nounits
    assert d["smi_unknown"].startswith("CalledProcessError")
    # no sgl_kernel in this python: an import-only stand-in; nothing in it runs
    assert d["sgl_kernel"] == "0+mambaconsole.planned"
    assert "sgl_kernel.scalar_type.scalar_types.uint4b8" in d["attr"]
    assert "sgl_kernel.fused_add_rmsnorm was used" in d["call"] and "import-only" in d["call"]
    assert "Torch not compiled with CUDA" in d["tensor"]  # the device itself is still not here
    assert d["initialized"] is False
    assert any("no sgl_kernel" in n for n in d["notes"])
    assert d["notes"][0].startswith("planned device: NVIDIA RTX PRO 6000 Blackwell Server Edition, 96.0 GiB, "
                                    "compute capability 12.0, CUDA 12.8")


@pytest.mark.sglang
@pytest.mark.timeout(200)
def test_an_installed_sgl_kernel_is_left_alone():
    d = standins(str(ROOT / "tests/sglang-venvs/server-stub"))
    assert d["sgl_kernel"] == "0.0.0+mambaconsole.standin"  # the one on PYTHONPATH, not ours
    assert not any("no sgl_kernel" in n for n in d["notes"])


# --- SGLang's own resolution on the planned device ----------------------------------------------


@pytest.mark.sglang
@pytest.mark.timeout(300)
def test_0_5_11_resolves_the_seed_as_on_an_rtx_pro_6000(tmp_path):
    r = resolve_on("0.5.11", RTX_PRO_6000, seed_argv("0.5.11"), tmp_path)
    assert r["ok"], r["error"]
    f = r["fields"]
    # accepted: on CPU 0.5.11 refuses it ("extra_buffer ... requires ... CUDA")
    assert f["mamba_scheduler_strategy"]["value"] == "extra_buffer"
    assert (f["device"]["value"], writer(f["device"])) == ("cuda", "_handle_missing_default_values")
    # server_args.py:1354-1366: 96 GiB = 98304 MiB is in [90, 160) GiB: chunked prefill 8k, graphs up to 256 (tp < 4)
    assert (f["chunked_prefill_size"]["value"], writer(f["chunked_prefill_size"])) == (8192, "_handle_gpu_memory_settings")
    assert f["cuda_graph_max_bs"]["value"] == 256
    # server_args.py:1514-1521 (speculative decoding): 1..8, 10..32 by 2, 40..64 by 4, 72..256 by 8
    assert f["cuda_graph_bs"]["value"] == [*range(1, 9), *range(10, 33, 2), *range(40, 65, 4), *range(72, 257, 8)]
    # server_args.py:2491-2513: not Hopper, not SM100; no flashinfer in this venv -> triton
    assert f["attention_backend"]["value"] == "triton"
    assert f["speculative_algorithm"]["value"] == "EAGLE"  # NEXTN is EAGLE (server_args.py:3311)
    assert r["messages"][0]["message"].startswith("planned device: NVIDIA RTX PRO 6000")
    assert any("no flashinfer" in m["message"] for m in r["messages"])


@pytest.mark.sglang
@pytest.mark.timeout(300)
def test_0_5_11_sizes_its_default_fraction_for_the_planned_gpu(tmp_path):
    """The budget's first input, --mem-fraction-static, when not given: SGLang derives it from
    the GPU's memory (on CPU it takes another branch)."""
    r = resolve_on("0.5.11", H100, ["--model-path", str(MODELS["qwen3-next"])], tmp_path)
    assert r["ok"], r["error"]
    f = r["fields"]
    assert f["attention_backend"]["value"] == "fa3"  # server_args.py:2492: Hopper, CUDA >= 12.3, no spec
    gpu_mib = 80 * 1024  # nvidia-smi's memory.total of the planned GPU
    chunk, max_bs = 8192, 256  # server_args.py:1344-1356: [60, 90) GiB, tp 1 < 4
    assert (f["chunked_prefill_size"]["value"], f["cuda_graph_max_bs"]["value"]) == (chunk, max_bs)
    reserved = 512 + max(chunk, 2048) * 1.5 + max_bs * 2 + 1 * 1 / 8 * 1024  # server_args.py:1432-1445
    assert f["disable_piecewise_cuda_graph"]["value"] is True  # so no piecewise term (:1458)
    reserved = max(reserved, 10 * 1024)  # :1466, a GPU over 60 GiB; no speculative decoding
    assert f["mem_fraction_static"]["value"] == round((gpu_mib - reserved) / gpu_mib, 3) == 0.836
    assert writer(f["mem_fraction_static"]) == "_handle_gpu_memory_settings"


@pytest.mark.sglang
@pytest.mark.timeout(300)
def test_0_5_23_on_an_h100_takes_the_hopper_branches(tmp_path):
    r = resolve_on("0.5.23", H100, seed_argv("0.5.23"), tmp_path)
    assert r["ok"], r["error"]
    f = r["fields"]
    assert f["mamba_radix_cache_strategy"]["value"] == "extra_buffer"
    # arg_groups/model_override_base.py:303: Hopper with CUDA >= 12.3 and EAGLE topk 1 -> fa3
    assert f["attention_backend"]["value"] == "fa3"
    # arg_groups/memory_hook.py:132-145: 80 GiB = 81920 MiB is in [60, 90) GiB: chunked prefill 8k
    assert f["chunked_prefill_size"]["value"] == 8192
    # memory_hook.py:184-188: the default decode max_bs 256 is capped at --max-running-requests 16
    assert "max_bs=16" in str(f["cuda_graph_config"]["value"])


@pytest.mark.sglang
@pytest.mark.timeout(300)
@pytest.mark.parametrize("version", ["0.5.11", "0.5.23"])
def test_plan_the_seed_on_a_laptop(tmp_path, version):
    py = sglang_python(version)
    env = [x for k, v in sglang_env_extra().items() for x in ("--env", f"{k}={v}")]
    out = subprocess.run([sys.executable, "-m", "mambaconsole", "plan", "--python", str(py), *env, "--json",
                          "--gpu-memory-gib", "96", "--gpu-name", "RTX PRO 6000 Blackwell", "--", *seed_argv(version)],
                         capture_output=True, text=True, timeout=280,
                         env={**sglang_env(), "MAMBACONSOLE_CONFIG": str(tmp_path / "none.toml")})
    assert out.returncode in (0, 1), out.stderr
    p = json.loads(out.stdout)
    assert out.returncode == (0 if p["fits"] else 1)
    assert p["sglang_version"] == version and p["gpu_planned"] is True and p["gpu_total_gib"] == 96
    assert p["notes"][0].startswith("planned device: RTX PRO 6000 Blackwell, 96.0 GiB, compute capability 12.0")
    assert not any("resolved these arguments for device" in n for n in p["notes"])  # resolved for cuda
    assert any(n.startswith("extra_buffer: each request's 2 tracking slots come out of the Mamba slots") for n in p["notes"])
    assert p["max_mamba_cache_size"] and p["max_running_requests"]
    # real sizing: extra_buffer's tracking slots come out of the pool's size + 1 rows (0.5.11
    # mem_cache/memory_pool.py:260 MambaPool, :590 HybridReqToTokenPool alloc; 0.5.23 :724), so the default
    # caps fit on the planned GPU; what is left for graphs is under SGLang's own reserve: a risk
    assert (p["fits"], p["fails_at"]) == (True, None) and p["risk"]
    assert "planned for a 96 GiB RTX PRO 6000 Blackwell, not measured" in render(p).splitlines()[0]


# --- the CLI's description of the planned GPU ----------------------------------------------------


def test_compute_capability_of_named_gpus():
    # NVIDIA's CUDA GPUs list: Hopper 9.0, Ada 8.9, Blackwell data centre 10.0, Blackwell workstation 12.0
    assert gpu_capability("NVIDIA H100 80GB HBM3") == (9, 0)
    assert gpu_capability("NVIDIA H200") == (9, 0)
    assert gpu_capability("NVIDIA L40S") == (8, 9)
    assert gpu_capability("NVIDIA L4") == (8, 9)
    assert gpu_capability("NVIDIA A10G") is None  # not A10: the A10G is not in the list
    assert gpu_capability("NVIDIA RTX PRO 6000 Blackwell Server Edition") == (12, 0)
    assert gpu_capability("NVIDIA B200") == (10, 0)
    assert gpu_capability("Some Accelerator") is None


def _args(**kw) -> argparse.Namespace:
    base = {"gpu_memory_gib": None, "gpu_name": None, "gpu_capability": None, "gpu_count": 1, "cuda_version": "12.8"}
    return argparse.Namespace(**{**base, **kw})


def test_the_planned_gpu_must_be_described():
    assert planned_device_of(_args()) is None
    with pytest.raises(UsageError, match="needs the GPU's --gpu-name or --gpu-capability"):
        planned_device_of(_args(gpu_memory_gib=96))
    with pytest.raises(UsageError, match="not known here: give --gpu-capability"):
        planned_device_of(_args(gpu_memory_gib=96, gpu_name="Mystery 9000"))
    with pytest.raises(UsageError, match="give --gpu-memory-gib N too"):
        planned_device_of(_args(gpu_name="H100"))
    with pytest.raises(UsageError, match="X.Y"):
        planned_device_of(_args(gpu_memory_gib=96, gpu_capability="nine"))
    d = planned_device_of(_args(gpu_memory_gib=80, gpu_name="H100", gpu_count=8))
    assert d == {"name": "H100", "total_bytes": 80 * GiB, "capability": [9, 0], "count": 8, "cuda_version": "12.8"}
    d = planned_device_of(_args(gpu_memory_gib=24, gpu_capability="8.9"))
    assert d["capability"] == [8, 9] and d["name"] == "GPU of compute capability 8.9"
