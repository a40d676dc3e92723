"""``mambaconsole inspect FILE --json`` on every real-world case: the values of each
``expected.md`` (read off the real inputs), through the real CLI entry point."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from mambaconsole.cli import main
from conftest import SHARED
from fixtures.sglang_cases import CASES

KEYS = {"capacity", "kind", "sglang_version", "ranks", "boots", "outcome", "failure", "memory_gb", "mamba_slots",
        "concurrency", "last_decode", "spec", "server_args", "metrics", "gpus", "findings",
        "multinode", "model"}
MEM_KEYS = {"weights", "kv_cache", "mamba_conv", "mamba_ssm", "mamba_intermediate", "mamba_total",
            "cuda_graph", "avail_after_load"}


def inspect(capsys, case: str, name: str = "input.log") -> dict:
    rc = main(["inspect", str(CASES / case / name), "--json"])
    out = capsys.readouterr().out
    assert rc == 0
    r = json.loads(out)
    assert set(r) == KEYS
    assert set(r["memory_gb"]) == MEM_KEYS
    assert set(r["concurrency"]) == {"requested", "effective", "slots_per_request"}
    assert set(r["spec"]) == {"enabled", "batches", "mean_accept_len", "collapsed"}
    if r["failure"] is not None:
        assert set(r["failure"]) == {"phase", "exception", "message", "rank", "where", "oom"}
        if r["failure"]["oom"] is not None:
            assert set(r["failure"]["oom"]) == {"tried_gib", "gpu", "capacity_gib", "free_gib", "in_use_gib",
                                                "allocated_gib", "reserved_unallocated_gib", "graph_pools_gib", "fragmentation"}
    if r["last_decode"] is not None:
        assert set(r["last_decode"]) == {"running", "token_usage", "mamba_num", "mamba_usage", "accept_len",
                                         "accept_rate", "graph", "gen_throughput", "queue"}
    return r


def codes(r):
    return [f["code"] for f in r["findings"]]


def test_case01(capsys):
    r = inspect(capsys, "case-01")
    assert r["kind"] == "log" and r["ranks"] == ["TP0", "TP1", "TP2", "TP3"]
    m = r["memory_gb"]
    assert (m["weights"], m["avail_after_load"]) == (37.41, 9.29)
    assert (m["mamba_conv"], m["mamba_ssm"]) == (0.02, 0.86) and m["mamba_total"] == pytest.approx(0.88)
    assert m["kv_cache"] is None
    assert r["mamba_slots"] is None                    # "not reported", never 0
    assert r["outcome"] == "starting" and r["failure"] is None  # no failure class, not OOM
    assert "rank_missing_line" in codes(r)


def test_case02(capsys):
    r = inspect(capsys, "case-02")
    assert r["ranks"] == ["DP0 TP0 EP0", "DP1 TP1 EP1", "DP2 TP2 EP2", "DP3 TP3 EP3"]
    assert r["memory_gb"]["kv_cache"] == pytest.approx(63.78)
    assert r["mamba_slots"] is None and r["memory_gb"]["mamba_total"] is None
    assert r["last_decode"] is None                    # prefill lines are not decode
    assert r["spec"]["enabled"] is None and r["spec"]["batches"] == 0
    missing = [f["message"] for f in r["findings"] if f["code"] == "rank_missing_line"]
    assert any("KV cache" in m and "not for DP2 TP2 EP2" in m for m in missing)


def test_case04(capsys):
    r = inspect(capsys, "case-04")
    assert r["concurrency"]["effective"] == 6
    assert "context_exceeds_kv_pool" in codes(r)


def test_case06(capsys):
    r = inspect(capsys, "case-06")
    assert r["concurrency"] == {"requested": None, "effective": 2, "slots_per_request": 5}
    assert r["mamba_slots"] == 10
    assert "concurrency_capped" in codes(r)


def test_case09(capsys):
    r = inspect(capsys, "case-09")
    assert r["outcome"] == "arg_error"
    f = r["failure"]
    assert (f["phase"], f["exception"]) == ("args", "ValueError")
    assert "Qwen3_5MoeForConditionalGeneration" in f["message"]


def test_case11(capsys):
    r = inspect(capsys, "case-11")
    assert r["outcome"] == "crashed" and r["failure"]["exception"] == "TypeError"
    r2 = inspect(capsys, "case-11", "input.txt")
    assert r2["outcome"] == "arg_error" and r2["failure"]["phase"] == "args"
    assert r2["failure"]["exception"] == "ValueError"


def test_case12(capsys):
    r = inspect(capsys, "case-12")
    assert r["outcome"] == "arg_error" and r["failure"]["exception"] == "AssertionError"
    assert r["failure"]["message"].endswith("got 128")


def test_case16(capsys):
    r = inspect(capsys, "case-16")
    d = r["last_decode"]
    assert (d["accept_len"], d["accept_rate"], d["graph"], d["gen_throughput"]) == (6.90, 0.84, True, 1033.37)
    assert d["running"] is None
    assert r["spec"] == {"enabled": True, "batches": 1, "mean_accept_len": 6.9, "collapsed": False}


def test_case18(capsys):
    r = inspect(capsys, "case-18")
    assert r["memory_gb"]["cuda_graph"] == 0.57
    assert r["outcome"] == "starting" and r["failure"] is None
    r2 = inspect(capsys, "case-18", "input.txt")
    assert r2["failure"]["exception"] == "TypeError" and r2["outcome"] == "crashed"


def test_case19(capsys):
    r = inspect(capsys, "case-19")
    assert r["outcome"] == "oom"
    f = r["failure"]
    assert (f["phase"], f["exception"]) == ("load", "torch.OutOfMemoryError")
    assert "95.08 GiB" in f["message"]
    assert r["memory_gb"]["kv_cache"] is None and r["memory_gb"]["mamba_total"] is None
    # expected.md item 2: PyTorch's numbers (GiB; 5.54 MiB reserved-unallocated), and item 4:
    # the fragmentation advice in the message does not apply (5.54 MiB cached < 2.00 GiB asked)
    oom = f["oom"]
    assert (oom["gpu"], oom["capacity_gib"], oom["free_gib"], oom["in_use_gib"], oom["allocated_gib"],
            oom["tried_gib"]) == (0, 95.08, 1.27, 93.27, 92.83, 2.00)
    assert abs(oom["reserved_unallocated_gib"] - 5.54 / 1024) < 1e-9 and oom["fragmentation"] is False
    # item 1: before any cache pool, so the cache flags cannot fix it
    (finding,) = [x["message"] for x in r["findings"] if x["code"] == "oom"]
    assert "before any KV or Mamba cache pool" in finding and "--mem-fraction-static" in finding


def test_case21(capsys):
    r = inspect(capsys, "case-21")
    assert r["outcome"] == "crashed"
    f = r["failure"]
    assert (f["exception"], f["rank"], f["phase"]) == ("AssertionError", "TP0", "runtime")
    assert "x.id=12500" in f["message"] and r["ranks"] == ["TP0", "TP1"]


def test_case23(capsys):
    for name, exc in (("input.log", "NameError"), ("input.txt", "AssertionError")):
        r = inspect(capsys, "case-23", name)
        assert r["outcome"] == "crashed" and r["failure"]["exception"] == exc
        assert r["failure"]["phase"] == "runtime" and "oom" not in codes(r)


def test_case24(capsys):
    r = inspect(capsys, "case-24")
    assert r["outcome"] == "crashed"
    f = r["failure"]
    assert (f["exception"], f["rank"], f["phase"]) == ("RuntimeError", "TP3", "runtime")
    assert f["message"] == "moe_sum_reduce CUDA kernel (small-token) launch failed"
    assert r["concurrency"]["effective"] == 16


def test_case26(capsys):
    r = inspect(capsys, "case-26", "input.txt")
    assert r["kind"] == "server_info" and r["sglang_version"] == "0.5.19" and r["outcome"] == "ready"
    m = r["memory_gb"]
    assert (m["weights"], m["kv_cache"], m["cuda_graph"]) == (19.699, 8.0, 0.111)
    assert r["mamba_slots"] == 8
    assert r["concurrency"]["requested"] == 2 and r["concurrency"]["effective"] == 2
    assert r["spec"]["enabled"] is False                 # "off", not 0
    assert "concurrency_capped" not in codes(r)
    dis = [f["message"] for f in r["findings"] if f["code"] == "server_info_disagrees"]
    assert len(dis) == 3
    sa = r["server_args"]
    assert sa["disable_chunked_prefix_cache"] is True and sa["pp_max_micro_batch_size"] == 2
    assert sa["disaggregation_decode_retraction_backup"] == "cpu_tensor"
    assert sa["mamba_radix_cache_strategy"] == "extra_buffer_lazy"


def test_case27(capsys):
    r = inspect(capsys, "case-27", "input.txt")
    assert r["kind"] == "metrics"
    m = r["metrics"]
    assert m["num_running_reqs"] == 1.0 and m["num_used_tokens"] == 1.0 and m["token_usage"] == 0.0
    assert m["gen_throughput"] == pytest.approx(0.84, abs=0.005)
    assert m["label_names"] == ["engine_type", "model_name", "pp_rank", "tp_rank"]
    assert "mamba_usage" not in m and "spec_accept_length" not in m   # not exported ≠ 0
    assert r["spec"]["enabled"] is None


def test_case28(capsys):
    r = inspect(capsys, "case-28", "input.txt")
    assert r["kind"] == "gpu_table"
    assert [(g["index"], g["memory_used_mib"], g["memory_total_mib"]) for g in r["gpus"]] == [
        (0, 66601, 81251), (1, 57915, 81251), (2, 57915, 81251), (3, 57627, 81251)]
    assert "gpu_extra_processes" in codes(r)


def test_case31(capsys):
    r = inspect(capsys, "case-31")
    assert r["outcome"] == "crashed"
    f = r["failure"]
    assert (f["phase"], f["exception"]) == ("startup", "AssertionError") and "502" in f["message"]
    assert r["memory_gb"]["avail_after_load"] == 9.69
    assert r["concurrency"]["effective"] == 2049
    assert "warmup_failed" in codes(r)


def test_human_output_and_errors(capsys, tmp_path):
    assert main(["inspect", str(CASES / "case-19" / "input.log")]) == 0
    out = capsys.readouterr().out
    assert "outcome: oom" in out and "torch.OutOfMemoryError" in out
    assert main(["inspect", str(tmp_path / "nope.log")]) == 1
    assert capsys.readouterr().err.strip() == f"mambaconsole: error: {tmp_path / 'nope.log'}: no such file"
    bad = tmp_path / "x.json"
    bad.write_text("[1, 2]")
    assert main(["inspect", str(bad), "--kind", "server_info"]) == 1
    assert "not a JSON object" in capsys.readouterr().err


def test_several_boots_describe_the_last(capsys, tmp_path):
    log = tmp_path / "two.log"
    log.write_text(
        "[2026-10-01 12:00:00] server_args=ServerArgs(model_path='m', max_running_requests=8, speculative_algorithm='EAGLE')\n"
        "[2026-10-01 12:00:01 TP0] Load weight end. elapsed=1.00 s, type=X, avail mem=50.00 GB, mem usage=30.00 GB.\n"
        "[2026-10-01 12:00:02 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
        "[2026-10-01 12:05:00] server_args=ServerArgs(model_path='m', max_running_requests=8, speculative_algorithm='EAGLE')\n"
        "[2026-10-01 12:05:01 TP0] Load weight end. elapsed=1.00 s, type=X, avail mem=50.00 GB, mem usage=31.00 GB.\n"
        "[2026-10-01 12:05:05 TP0] max_running_requests is capped to 4 by the mamba state cache (max_mamba_cache_size=20, 5 state slots per request).\n"
        "[2026-10-01 12:05:09] The server is fired up and ready to roll!\n"
        + "".join(f"[2026-10-01 12:06:0{i} TP0] Decode batch, #running-req: 4, #token: 10, token usage: 0.01, accept len: 1.00, accept rate: 0.00, cuda graph: True, gen throughput (token/s): 10.00, #queue-req: 4\n" for i in range(3)))
    rc = main(["inspect", str(log), "--json"])
    r = json.loads(capsys.readouterr().out)
    assert rc == 0 and r["boots"] == 2 and r["outcome"] == "ready" and r["failure"] is None
    assert r["memory_gb"]["weights"] == 31.0
    assert r["concurrency"] == {"requested": 8, "effective": 4, "slots_per_request": 5}
    assert r["spec"] == {"enabled": True, "batches": 3, "mean_accept_len": 1.0, "collapsed": True}
    assert {"spec_collapsed", "concurrency_capped"} <= set(codes(r))


def test_entry_point_subprocess():
    p = subprocess.run([sys.executable, "-m", "mambaconsole", "inspect", str(CASES / "case-06" / "input.log"), "--json"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and json.loads(p.stdout)["concurrency"]["effective"] == 2


def test_case02_per_rank_view_never_copies_values(capsys):
    from mambaconsole.sglang.inspect import per_rank_memory

    ranks = per_rank_memory((CASES / "case-02" / "input.log").read_text())
    assert {r: m["avail_after_pool"] for r, m in ranks.items()} == {
        "DP0 TP0 EP0": 34.15, "DP1 TP1 EP1": 34.12, "DP2 TP2 EP2": 34.12, "DP3 TP3 EP3": 34.27}
    assert {r: m["avail_before_graph"] for r, m in ranks.items() if m["avail_before_graph"]} == {
        "DP0 TP0 EP0": 34.08, "DP1 TP1 EP1": 34.05}
    assert ranks["DP2 TP2 EP2"]["kv_cache"] is None and ranks["DP2 TP2 EP2"]["kv_tokens"] is None
    assert ranks["DP3 TP3 EP3"]["kv_tokens"] == 2786325
    assert len(ranks["DP0 TP0 EP0"]["graph_batch_sizes"]) == 24
    assert main(["inspect", str(CASES / "case-02" / "input.log")]) == 0
    out = capsys.readouterr().out
    assert "DP2 TP2 EP2      kv_cache —, kv_tokens —" in out
    assert "  no rank printed: weights, " in out  # no rank's weights line in the input: said once


def test_version_named_in_the_log(capsys, tmp_path):
    p = tmp_path / "v.log"
    p.write_text("[2026-10-01 12:00:00] pulling lmsysorg/sglang:v0.5.19\n")
    assert main(["inspect", str(p), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["sglang_version"] == "0.5.19"


def test_readable_inspect_shows_what_the_cases_expect(capsys):
    """The readable summary carries what case-04 and case-26 expected.md list beyond the
    JSON shape (values read off the cases' expected.md)."""
    from mambaconsole.cli import main

    assert main(["inspect", str(CASES / "case-04" / "input.log")]) == 0
    out = capsys.readouterr().out
    # case-04 items 2-4: KV pool 206,635 tokens, context 262,144, 1.81 GB (SGLang's GB = GiB) free, 2048 / 16384
    for s in ("KV pool 206635 tokens", "context_len 262144", "free GPU memory after init 1.81 GiB",
              "chunked_prefill_size 2048", "max_prefill_tokens 16384"):
        assert s in out
    assert main(["inspect", str(CASES / "case-26" / "input.txt")]) == 0
    out = capsys.readouterr().out
    # case-26 items 1, 2, 4, 7
    for s in ('"/models/Qwen3.8-27B-NVFP4"', '"qwen3.8-27b"', "tp_size 1", "port 8080", "status ready",
              '"extra_buffer_lazy"', "max_mamba_cache_size 8", '"bfloat16"', "mamba_full_memory_ratio 0.9",
              "mamba_track_interval 256", "mamba_max_states_per_path 2", '"triton"',
              "enable_hierarchical_cache true", "startup free 1.913 GiB", "token capacity 262144",
              "load_weight 6.19", "kv_cache_allocation 0.34", "scheduler_e2e 24.08", "tokenizer_e2e 32.14"):
        assert s in out, s
    assert "not reported" not in out.split("concurrency")[0]  # memory lists what the input has


def test_empty_or_foreign_text_is_a_clear_error_not_an_empty_log():
    """Nothing to read, or text in which no line is SGLang's (a binary, a list of numbers), is
    refused with one line naming what was expected; ``kind="log"`` reads it anyway."""
    from mambaconsole.errors import ConsoleError
    from mambaconsole.sglang.inspect import inspect_text

    for empty in ("", "\n\n  \n", b""):
        with pytest.raises(ConsoleError, match="empty input"):
            inspect_text(empty)
    foreign = "1\n2\n3\nhello world\n\x7fELF\x02\x01\x01 binary garbage\n"
    with pytest.raises(ConsoleError, match="not an SGLang log"):
        inspect_text(foreign)
    forced = inspect_text(foreign, kind="log")
    assert forced["kind"] == "log" and forced["outcome"] == "unknown"
    # one enveloped SGLang line is enough (literal 0.5.x envelope, sglang-observables §1)
    one = inspect_text("noise\n[2026-04-23 07:32:12] Load weight begin. avail mem=94.56 GB\n")
    assert one["kind"] == "log"


def test_the_model_is_the_target_loads_class_and_dtype(capsys):
    """``Load weight end. ... type=X, dtype=torch.D``: the target model's class and weights dtype,
    the draft model's load (an MTP class after it) never taken for it; a log whose lines print
    no dtype (0.5.23) says it is not shown."""
    r = inspect(capsys, "case-01")
    assert r["model"] == {"architecture": "Qwen3NextForCausalLM", "dtype": "bfloat16"}
    real = SHARED / "reference" / "cpu-sglang" / "real-0.5.23" / "qspec_server.log"
    rc = main(["inspect", str(real), "--json"])
    spec = json.loads(capsys.readouterr().out)
    assert rc == 0 and spec["model"] == {"architecture": "Qwen3NextForCausalLM", "dtype": None}
    rc = main(["inspect", str(real)])
    assert "model: Qwen3NextForCausalLM, dtype not shown" in capsys.readouterr().out
