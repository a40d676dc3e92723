"""``mambaconsole plan`` and the node facts it reads (issue 18): config.json from a folder or the
Hugging Face cache, weights from safetensors headers or the index (never the tensors), GPUs
from NVML, and the prediction on the real SGLang 0.5.23 resolution."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from fixtures.sglang_venvs import MODELS, sglang_env_extra, sglang_python
from mambaconsole.commands.plan import PlanError, make_plan
from mambaconsole.node.runs import agent_script

GiB = 1 << 30
CONFIG = json.loads((MODELS["qwen3.6-hybrid"] / "config.json").read_text())


def facts(path: str, env: dict | None = None) -> dict:
    out = subprocess.run([sys.executable, "-", path], input=agent_script("node_facts.py"), capture_output=True,
                         timeout=60, check=True, env={**os.environ, **(env or {})})
    return json.loads(out.stdout)


def fake_safetensors(path: Path, tensors: dict[str, int]) -> int:
    """A safetensors file whose header declares ``tensors`` (name -> bytes) but holds only 16
    bytes of data: the reader must never need the tensors. Returns the declared total."""
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, n in tensors.items():
        header[name] = {"dtype": "BF16", "shape": [n // 2], "data_offsets": [offset, offset + n]}
        offset += n
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * 16)
    return offset


def test_weights_from_safetensors_headers_only(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(CONFIG))
    a = fake_safetensors(tmp_path / "model-00001-of-00002.safetensors", {"a": 40 * GiB, "b": 2 * GiB})
    b = fake_safetensors(tmp_path / "model-00002-of-00002.safetensors", {"c": 9 * GiB + 6})
    f = facts(str(tmp_path))
    assert f["config"]["architectures"] == ["Qwen3_5ForConditionalGeneration"]
    assert (f["weights_bytes"], f["weights_source"], f["weights_files"]) == (a + b, "safetensors", 2)
    assert a + b == 51 * GiB + 6


def test_weights_from_the_index_and_a_bad_header(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(CONFIG))
    (tmp_path / "model.safetensors").write_bytes(struct.pack("<Q", 1 << 40))  # not a safetensors header
    f = facts(str(tmp_path))
    assert f["weights_bytes"] is None and any("not a safetensors header" in e for e in f["errors"])
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": 54_975_581_184}}))
    f = facts(str(tmp_path))
    assert (f["weights_bytes"], f["weights_source"]) == (54_975_581_184, "index")


def test_repo_id_from_the_hugging_face_cache(tmp_path):
    repo = tmp_path / "hub" / "models--Qwen--Qwen3.6-27B"
    old, new = repo / "snapshots" / "aaa", repo / "snapshots" / "bbb"
    for snap in (old, new):
        snap.mkdir(parents=True)
    (old / "config.json").write_text(json.dumps({"architectures": ["Old"]}))
    (new / "config.json").write_text(json.dumps(CONFIG))
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("bbb\n")
    f = facts("Qwen/Qwen3.6-27B", {"HF_HUB_CACHE": str(tmp_path / "hub")})
    assert f["config_path"] == str(new / "config.json")
    assert f["weights_bytes"] is None  # no weights downloaded: the plan estimates
    missing = facts("Qwen/NotThere", {"HF_HUB_CACHE": str(tmp_path / "hub")})
    assert missing["config"] is None and "not a folder and not in the Hugging Face cache" in missing["errors"][0]


def _resolved(version: str, **fields) -> dict:
    base = {"model_path": "Qwen/Qwen3.6-27B", "tp_size": 1, "pp_size": 1, "page_size": 1, "device": "cuda",
            "mem_fraction_static": 0.9, "mamba_full_memory_ratio": 0.9, "max_mamba_cache_size": None,
            "max_running_requests": 16, "speculative_algorithm": "EAGLE", "speculative_num_draft_tokens": 4,
            "mamba_radix_cache_strategy": "extra_buffer", "disable_overlap_schedule": False,
            "disable_radix_cache": False, "chunked_prefill_size": 8192, "max_total_tokens": None}
    base.update(fields)
    return {"sglang_version": version, "ok": True,
            "fields": {k: {"value": v, "source": "cli" if k in fields else "default"} for k, v in base.items()}}


def test_plan_json_keys_and_an_estimate():
    f = {"model_path": "Qwen/Qwen3.6-27B", "config": CONFIG, "config_path": "/x/config.json", "weights_bytes": None,
         "weights_source": None, "gpus": [], "errors": []}
    p = make_plan(_resolved("0.5.23"), f, gpu_memory_gib=96)
    assert {"fits", "fails_at", "need_gib", "free_gib", "budget_gib", "max_mamba_cache_size", "max_running_requests",
            "advice"} <= set(p)
    assert set(p["budget_gib"]) == {"weights", "kv_cache", "mamba", "cuda_graph"}
    assert p["weights_source"] == "estimated" and p["gpu_planned"] is True
    # Qwen3.6-27B: 27 B parameters in bf16 = 50.3 GiB; the config estimate is within 2 %
    assert abs(p["budget_gib"]["weights"] - 27e9 * 2 / GiB) / (27e9 * 2 / GiB) < 0.02
    with pytest.raises(PlanError, match="no GPU readable"):
        make_plan(_resolved("0.5.23"), f)
    with pytest.raises(PlanError, match="no config.json"):
        make_plan(_resolved("0.5.23"), {**f, "config": None})


def test_plan_uses_the_nodes_gpu_and_weights():
    f = {"model_path": "m", "config": CONFIG, "config_path": "c", "weights_bytes": int(51.2 * GiB),
         "weights_source": "safetensors", "errors": [],
         "gpus": [{"index": 0, "name": "GPU A", "total_bytes": 96 * GiB, "free_bytes": 30 * GiB}]}
    p = make_plan(_resolved("0.5.23"), f)
    # 51.2 GiB of weights on a GPU with 30 GiB free, less the CUDA context SGLang creates first
    assert (p["fits"], p["fails_at"], p["need_gib"]) == (False, "weights", 51.2)
    assert p["free_gib"] == round((30 * GiB - int(0.55 * GiB)) / GiB, 3)
    assert p["gpu_name"] == "GPU A"
    assert p["advice"] == []  # no Mamba cap or fraction makes 51.2 GiB fit in 30
    # a hybrid whose weights do not fit: its Mamba pool is not sized, not absent
    from mambaconsole.commands.plan import render

    assert CONFIG.get("layer_types") or CONFIG.get("text_config", {}).get("layer_types")
    text = render(p)
    assert "not sized: the boot fails before the Mamba pool" in text and "no linear-attention" not in text


def test_plan_without_sglang_says_which_python_to_give(tmp_path):
    """The python given cannot import sglang: the one-line error says to give the server's."""
    env = {**os.environ, "MAMBACONSOLE_CONFIG": str(tmp_path / "none.toml")}
    for planned in ([], ["--gpu-memory-gib", "96", "--gpu-name", "H100"]):  # with a planned GPU too
        p = subprocess.run([sys.executable, "-m", "mambaconsole", "plan", "--python", sys.executable, *planned, "--",
                            "--model-path", "m"], capture_output=True, text=True, timeout=120, env=env)
        assert p.returncode == 1 and p.stdout == ""
        assert "cannot import sglang" in p.stderr and "--python PATH" in p.stderr and p.stderr.count("\n") == 1


@pytest.mark.sglang
@pytest.mark.timeout(300)
def test_plan_cli_on_real_sglang_0_5_23(tmp_path):
    py = sglang_python("0.5.23")
    env = [x for k, v in sglang_env_extra().items() for x in ("--env", f"{k}={v}")]
    argv = ["--model-path", str(MODELS["qwen3.6-hybrid"]), "--device", "cpu", "--mem-fraction-static", "0.9",
            "--speculative-algorithm", "NEXTN", "--speculative-num-steps", "3", "--speculative-eagle-topk", "1",
            "--speculative-num-draft-tokens", "4", "--max-running-requests", "16",
            "--mamba-radix-cache-strategy", "no_buffer", "--disable-overlap-schedule", "--max-mamba-cache-size", "400"]
    out = subprocess.run([sys.executable, "-m", "mambaconsole", "plan", "--python", str(py), *env, "--json",
                          "--gpu-memory-gib", "96", "--gpu-name", "RTX PRO 6000 Blackwell", "--", *argv], capture_output=True, text=True, timeout=240)
    p = json.loads(out.stdout)
    assert out.returncode == 1, out.stderr
    # 401 slots x 146.8 MiB = 57.5 GiB on top of ~51 GiB of weights on a 96 GiB GPU
    assert p["fits"] is False and p["fails_at"] == "mamba_pool" and p["sglang_version"] == "0.5.23"
    sizes = [a for a in p["advice"] if "--max-mamba-cache-size" in a["flags"]]
    assert sizes and 0 < int(sizes[0]["flags"]["--max-mamba-cache-size"]) < 400
    assert sizes[0]["slots_per_request"] == 3  # no_buffer: 3 slots per request
    assert any("device 'cpu'" in n for n in p["notes"])
