"""Log lines → typed events: the real-world cases, one literal line per format per version
(from shared/reference/sglang-observables.md), and robustness against any input."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from mambaconsole.sglang import events as ev
from mambaconsole.sglang.events import LogParser, parse_line, parse_text
from mambaconsole.sglang.text import display_text

from fixtures.sglang_cases import CASES


def events_of(case: str, name: str = "input.log") -> list[ev.Event]:
    return parse_text((CASES / case / name).read_bytes())


def of_type(events, cls):
    return [e for e in events if type(e) is cls]


# ---------------------------------------------------------------- cases


def test_case01_early_mamba_line_has_no_slot_count_and_cut_line_is_ignored():
    evs = events_of("case-01")
    w = of_type(evs, ev.WeightsLoaded)
    assert [(e.rank, e.arch, e.dtype, e.mem_usage_gb, e.avail_gb) for e in w] == [
        ("TP0", "Qwen3NextForCausalLM", "bfloat16", 37.41, 9.29)]
    mamba = of_type(evs, ev.MambaCacheAllocated)
    assert sorted(e.rank for e in mamba) == ["TP0", "TP1"]  # TP2's line is cut, TP3 has none
    for e in mamba:
        assert (e.conv_gb, e.ssm_gb, e.max_mamba_cache_size) == (0.02, 0.86, None)
        assert e.total_gb == pytest.approx(0.88)
    changed = of_type(evs, ev.SettingChanged)
    assert {e.rank for e in changed} == {"TP0", "TP1", "TP2", "TP3"}
    assert {(e.setting, e.value) for e in changed} == {("disable_radix_cache", True)}
    cut = evs[-1]
    assert type(cut) is ev.Text and cut.rank == "TP2" and "alloca" in cut.text


def test_case02_three_part_rank_tags_and_prefill_is_not_decode():
    evs = events_of("case-02")
    kv = of_type(evs, ev.KVCacheAllocated)
    assert sorted(e.rank for e in kv) == ["DP0 TP0 EP0", "DP1 TP1 EP1", "DP3 TP3 EP3"]
    for e in kv:
        assert (e.tokens, e.k_gb, e.v_gb) == (2786325, 31.89, 31.89)
        assert e.total_gb == pytest.approx(63.78)
    pool = {e.rank: e.avail_gb for e in of_type(evs, ev.MemoryPoolEnd)}
    assert pool == {"DP0 TP0 EP0": 34.15, "DP1 TP1 EP1": 34.12, "DP2 TP2 EP2": 34.12, "DP3 TP3 EP3": 34.27}
    begin = {e.rank: e.avail_gb for e in of_type(evs, ev.GraphCaptureBegin)}
    assert begin == {"DP0 TP0 EP0": 34.08, "DP1 TP1 EP1": 34.05}
    (bs,) = of_type(evs, ev.GraphBatchSizes)
    assert len(bs.batch_sizes) == 24 and max(bs.batch_sizes) == 159
    assert ev.rank_tags("DP2 TP2 EP2") == {"DP": 2, "TP": 2, "EP": 2}
    assert not of_type(evs, ev.DecodeBatch)
    pre = of_type(evs, ev.PrefillBatch)
    assert len(pre) == 4
    for e in pre:
        assert (e.full_token_usage, e.mamba_usage, e.running, e.queue) == (0.0, 0.0, 0, 0)
        assert "accept len" not in e.fields


def test_case04_wrapped_ready_summary_is_joined():
    (e,) = events_of("case-04")
    assert type(e) is ev.ReadySummary
    assert (e.max_total_num_tokens, e.chunked_prefill_size, e.max_prefill_tokens,
            e.max_running_requests, e.context_len, e.available_gpu_mem_gb) == (
        206635, 2048, 16384, 6, 262144, 1.81)
    assert e.text.count("\n") == 1  # both physical lines kept for display


def test_case06_short_cap_message():
    (e,) = events_of("case-06")
    assert type(e) is ev.ConcurrencyCapped
    assert (e.effective, e.max_mamba_cache_size, e.slots_per_request) == (2, 10, 5)


def test_case09_final_valueerror_after_noise_and_midword_wrap():
    evs = events_of("case-09")
    assert type(evs[0]) is ev.PythonWarning and evs[0].category == "UserWarning"
    warn = evs[1]
    assert warn.level == "WARNING" and "transformers==4.57.1" in warn.message
    (tb,) = of_type(evs, ev.Traceback)
    assert tb.exc_type == "ValueError"
    assert tb.exc_message.startswith("Speculative decoding for Qwen3_5MoeForConditionalGeneration")
    assert "SGLANG_ENABLE_SPEC_V2=1" in tb.exc_message
    assert tb.oom is None


def test_case11_both_inputs_end_in_an_exception():
    (tb,) = of_type(events_of("case-11"), ev.Traceback)
    assert (tb.exc_type, tb.exc_message) == ("TypeError", "'NoneType' object is not subscriptable")
    (tb2,) = events_of("case-11", "input.txt")
    assert tb2.exc_type == "ValueError" and "--mamba-radix-cache-strategy=extra_buffer" in tb2.exc_message
    assert "Qwen2ForCausalLM" in tb2.exc_message


def test_case12_bare_assertion():
    (tb,) = events_of("case-12")
    assert tb.exc_type == "AssertionError" and tb.exc_message.endswith("got 128")


def test_case16_bare_decode_fragment():
    (e,) = events_of("case-16")
    assert type(e) is ev.DecodeBatch and e.fragment
    assert (e.accept_len, e.accept_rate, e.graph, e.gen_throughput) == (6.90, 0.84, True, 1033.37)


def test_case18_progress_bars_and_new_capture_lines():
    evs = events_of("case-18")
    (end,) = of_type(evs, ev.GraphCaptureEnd)
    assert (end.role, end.phase, end.elapsed_s, end.mem_usage_gb, end.avail_gb) == (
        "target", "verify", 202.07, 0.57, 17.75)
    (begin,) = of_type(evs, ev.GraphCaptureBegin)
    assert (begin.role, begin.phase, begin.backend, begin.avail_gb) == ("draft", "decode", "full", 17.75)
    assert len(begin.batch_sizes) == 21 and max(begin.batch_sizes) == 34
    prog = of_type(evs, ev.Progress)
    assert [(p.done, p.total) for p in prog] == [(16384, 16384), (21, 21), (21, 21)]
    assert prog[1].elapsed_s == 3 * 60 + 21
    (changed,) = of_type(evs, ev.SettingChanged)
    assert changed.value == "disabled"
    (tb,) = [e for e in events_of("case-18", "input.txt") if type(e) is ev.Traceback]
    assert tb.exc_type == "TypeError" and "cannot be interpreted as an integer" in tb.exc_message


def test_case19_cut_oom_traceback_tail():
    (tb,) = events_of("case-19")
    assert tb.exc_type == "torch.OutOfMemoryError" and tb.oom == "torch"
    assert "Tried to allocate 2.00 GiB" in tb.exc_message
    assert tb.frames[0].file.endswith("torch/utils/_device.py") and tb.frames[0].line == 103


def test_case21_error_line_then_scheduler_exception():
    evs = events_of("case-21")
    assert type(evs[0]) is ev.Text and evs[0].rank == "TP1"
    tb = evs[1]
    assert type(tb) is ev.Traceback and tb.rank == "TP0" and tb.origin == "Scheduler"
    assert tb.time == "2025-10-23 13:54:29"
    assert tb.exc_type == "AssertionError" and "x.id=12500" in tb.exc_message


def test_case23_elided_paths():
    (a,) = events_of("case-23")
    assert a.exc_type == "NameError" and a.frames[0].file.endswith("mamba/mamba.py")
    (b,) = events_of("case-23", "input.txt")
    assert b.exc_type == "AssertionError" and "relu2" in b.exc_message


def test_case24_ready_then_rank3_dies():
    evs = events_of("case-24")
    (rs,) = of_type(evs, ev.ReadySummary)
    assert (rs.rank, rs.max_total_num_tokens, rs.available_gpu_mem_gb) == ("TP0", 4235604, 13.91)
    (up,) = of_type(evs, ev.HttpServerUp)
    assert up.port == 30000 and up.time == "2026-04-23 07:32:01"
    (acc,) = of_type(evs, ev.HttpAccess)
    assert (acc.path, acc.status) == ("/model_info", 200)
    (tb,) = of_type(evs, ev.Traceback)
    assert (tb.rank, tb.time, tb.exc_type) == ("TP3", "2026-04-23 07:32:10", "RuntimeError")
    assert tb.exc_message == "moe_sum_reduce CUDA kernel (small-token) launch failed"
    assert len(tb.frames) == 4
    assert of_type(evs, ev.PythonWarning)[0].file.endswith("tokenization_utils_base.py")


def test_case31_warmup_failure_and_killed():
    evs = events_of("case-31")
    (w,) = of_type(evs, ev.WeightsLoaded)
    assert (w.avail_gb, w.mem_usage_gb) == (9.69, None)
    (end,) = of_type(evs, ev.GraphCaptureEnd)
    assert end.elapsed_s == 2.19
    (rs,) = of_type(evs, ev.ReadySummary)
    assert (rs.max_total_num_tokens, rs.max_running_requests, rs.context_len, rs.chunked_prefill_size) == (
        56524, 2049, 32768, None)
    (tb,) = of_type(evs, ev.Traceback)
    assert tb.header == "Initialization failed. warmup error:" and tb.exc_type == "AssertionError"
    assert "502" in tb.exc_message and "Killed" not in tb.exc_message
    assert type(evs[-1]) is ev.Killed


# ---------------------------------------------------------------- one literal line per format

ENV = "[2026-10-01 12:34:56 TP0] "

LITERALS = [
    # 2.5 decode
    ("0.5.5 D-A", "Decode batch, #running-req: 12, #token: 34567, token usage: 0.21, cuda graph: True, gen throughput (token/s): 1523.44, #queue-req: 0, ",
     ev.DecodeBatch, {"running": 12, "token": 34567, "token_usage": 0.21, "graph": True, "gen_throughput": 1523.44, "queue": 0, "accept_len": None}),
    ("0.5.5 D-B", "Decode batch, #running-req: 8, #full token: 20480, full token usage: 0.12, mamba num: 16, mamba usage: 0.03, accept len: 2.80, accept rate: 0.70, cuda graph: True, gen throughput (token/s): 812.05, #queue-req: 0, ",
     ev.DecodeBatch, {"running": 8, "full_token": 20480, "mamba_num": 16, "mamba_usage": 0.03, "accept_len": 2.80, "accept_rate": 0.70}),
    ("0.5.9 D-C", "Decode batch, #running-req: 8, #full token: 20480, full token usage: 0.12, mamba num: 16, mamba usage: 0.03, accept len: 2.80, accept rate: 0.70, cuda graph: True, gen throughput (token/s): 812.05, #queue-req: 0",
     ev.DecodeBatch, {"queue": 0, "accept_rate": 0.70, "token_usage": 0.12}),
    ("0.5.11 D-D", "Decode batch, #running-req: 8, #full token: 20480, full token usage: 0.12, mamba num: 16, mamba usage: 0.03, accept len: 2.80, accept rate: 0.60, cuda graph: True, gen throughput (token/s): 812.05, #queue-req: 0",
     ev.DecodeBatch, {"accept_rate": 0.60}),
    ("0.5.18 D-E", "Decode batch, #running-req: 8, #full token: 20480, full token usage: 0.12, mamba num: 16, mamba usage: 0.03, accept len: 2.80, accept rate: 0.60, cap len: 3.50, block accept len: 3.10, cuda graph: True, gen throughput (token/s): 812.05, #queue-req: 0",
     ev.DecodeBatch, {"cap_len": 3.50, "block_accept_len": 3.10, "accept_len": 2.80}),
    ("0.5.23 D-F", "Decode batch [1234], #running-req: 64, #full token: 4096, full token usage: 0.02, #swa token: 2048, swa token usage: 0.05, pre-allocated usage: 0.01, #prealloc-req: 0, #transfer-req: 2, #retracted-req: 0, cuda graph: True, gen throughput (token/s): 5210.77, #queue-req: 3, fwd occupancy: 91.20%, fwd+idle occupancy: 97.85%",
     ev.DecodeBatch, {"iteration": 1234, "running": 64, "swa_token": 2048, "swa_token_usage": 0.05, "queue": 3, "fwd_occupancy": 91.20}),
    ("0.5.18 DSpark", "Decode batch, #running-req: 4, #token: 100, token usage: 0.01, accept len: 2.10, accept rate: 0.40, est uncap acc len: 2.50 [1.90, 2.30], cuda graph: False, gen throughput (token/s): 10.00, #queue-req: 1",
     ev.DecodeBatch, {"est_uncap_accept_len": (2.5, 1.9, 2.3), "graph": False, "queue": 1}),
    ("0.5.11 npu", "Decode batch, #running-req: 1, #gpu token: 10, gpu token usage: 0.00, #cpu token: 5, cpu token usage: 0.00, npu graph: True, gen throughput (token/s): 1.00, #queue-req: 0",
     ev.DecodeBatch, {"graph": True, "graph_label": "npu graph"}),
    # 2.6 prefill
    ("0.5.5 prefill", "Prefill batch, #new-seq: 1, #new-token: 512, #cached-token: 0, token usage: 0.01, #running-req: 0, #queue-req: 0, ",
     ev.PrefillBatch, {"new_seq": 1, "new_token": 512, "cached_token": 0, "token_usage": 0.01, "graph": None}),
    ("0.5.9 prefill", "Prefill batch, #new-seq: 1, #new-token: 512, #cached-token: 0, token usage: 0.01, #running-req: 0, #queue-req: 0, input throughput (token/s): 0.00, cuda graph: False",
     ev.PrefillBatch, {"input_throughput": 0.0, "graph": False}),
    ("0.5.10 prefill", "Prefill batch, #new-seq: 1, #new-token: 512, #cached-token: 0, token usage: 0.01, #running-req: 0, #queue-req: 0, cuda graph: False, input throughput (token/s): 0.00",
     ev.PrefillBatch, {"input_throughput": 0.0, "graph": False}),
    ("0.5.11 prefill", "Prefill batch, #new-seq: 2, #new-token: 8192, #cached-token: 1024, full token usage: 0.05, mamba usage: 0.02, #running-req: 6, #queue-req: 1, #pending-token: 4096, cuda graph: False, input throughput (token/s): 23456.78",
     ev.PrefillBatch, {"pending_token": 4096, "mamba_usage": 0.02, "input_throughput": 23456.78, "running": 6}),
    # 3.1 startup
    ("0.5.5 dist", "Init torch distributed ends. mem usage=0.52 GB", ev.DistributedInit, {"mem_usage_gb": 0.52, "elapsed_s": None}),
    ("0.5.9 dist", "Init torch distributed ends. elapsed=1.20 s, mem usage=0.52 GB", ev.DistributedInit, {"mem_usage_gb": 0.52, "elapsed_s": 1.2}),
    ("0.5.23 parallel", "Init parallel ends. elapsed=3.02 s", ev.DistributedInit, {"elapsed_s": 3.02}),
    ("0.5.23 baseline", "Memory baseline taken. mem usage=0.52 GB", ev.DistributedInit, {"mem_usage_gb": 0.52}),
    ("all load begin", "Load weight begin. avail mem=139.30 GB", ev.WeightsLoadBegin, {"avail_gb": 139.30}),
    ("0.5.5 load", "Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=124.61 GB, mem usage=14.96 GB.",
     ev.WeightsLoaded, {"arch": "LlamaForCausalLM", "dtype": "bfloat16", "avail_gb": 124.61, "mem_usage_gb": 14.96, "elapsed_s": None}),
    ("0.5.9 load", "Load weight end. elapsed=12.40 s, type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=124.61 GB, mem usage=14.96 GB.",
     ev.WeightsLoaded, {"elapsed_s": 12.40, "dtype": "bfloat16"}),
    ("0.5.10 load quant", "Load weight end. elapsed=12.40 s, type=Qwen3MoeForCausalLM, quant=fp8, fmt=e4m3, avail mem=100.02 GB, mem usage=30.11 GB.",
     ev.WeightsLoaded, {"arch": "Qwen3MoeForCausalLM", "quant": "fp8", "dtype": None, "mem_usage_gb": 30.11}),
    ("0.5.15 mamba spec", "Mamba Cache is allocated. max_mamba_cache_size: 512, conv_state size: 0.44GB, ssm_state size: 13.50GB intermediate_ssm_state_cache size: 6.75GB intermediate_conv_window_cache size: 0.22GB ",
     ev.MambaCacheAllocated, {"max_mamba_cache_size": 512, "conv_gb": 0.44, "ssm_gb": 13.50, "intermediate_ssm_gb": 6.75, "intermediate_conv_gb": 0.22, "intermediate_gb": 6.97, "total_gb": 20.91}),
    ("all mamba", "Mamba Cache is allocated. max_mamba_cache_size: 1024, conv_state size: 0.88GB, ssm_state size: 27.00GB ",
     ev.MambaCacheAllocated, {"max_mamba_cache_size": 1024, "conv_gb": 0.88, "ssm_gb": 27.0, "intermediate_gb": None}),
    ("0.5.5 KV MHA", "KV Cache is allocated. #tokens: 1234567, K size: 11.77 GB, V size: 11.77 GB",
     ev.KVCacheAllocated, {"tokens": 1234567, "k_gb": 11.77, "total_gb": 23.54, "dtype": None}),
    ("0.5.5 KV MLA", "KV Cache is allocated. #tokens: 987654, KV size: 64.10 GB", ev.KVCacheAllocated, {"tokens": 987654, "kv_gb": 64.10, "total_gb": 64.10}),
    ("0.5.13 KV", "KV Cache is allocated. dtype: torch.bfloat16, #tokens: 1234567, K size: 11.77 GB, V size: 11.77 GB",
     ev.KVCacheAllocated, {"dtype": "bfloat16", "tokens": 1234567}),
    ("0.5.18 Full KV", "Full KV Cache is allocated. dtype: torch.bfloat16, #tokens: 524288, K size: 5.00 GB, V size: 5.00 GB",
     ev.KVCacheAllocated, {"label": "Full", "tokens": 524288, "total_gb": 10.0}),
    ("0.5.18 SWA KV", "SWA KV Cache is allocated. dtype: torch.bfloat16, #tokens: 262144, K size: 2.50 GB, V size: 2.50 GB",
     ev.KVCacheAllocated, {"label": "SWA", "tokens": 262144}),
    ("0.5.18 VA", "KV Cache VA upper bound. dtype: torch.bfloat16, #tokens: 2000000, K size: 19.07 GB, V size: 19.07 GB",
     ev.KVCacheAllocated, {"upper_bound": True, "tokens": 2000000}),
    ("0.5.18 post-capture", "Post-capture KV sizing: KV cache allocated. dtype: torch.bfloat16, #tokens: 1500000, KV size: 28.61 GB, avail mem=3.10 GB",
     ev.KVCacheAllocated, {"post_capture": True, "tokens": 1500000, "kv_gb": 28.61, "avail_gb": 3.10}),
    ("all pool end", "Memory pool end. avail mem=22.40 GB", ev.MemoryPoolEnd, {"avail_gb": 22.40}),
    ("0.5.5 capture begin", "Capture cuda graph begin. This can take up to several minutes. avail mem=22.40 GB",
     ev.GraphCaptureBegin, {"avail_gb": 22.40, "role": None, "phase": None}),
    ("0.5.5 capture end", "Capture cuda graph end. Time elapsed: 25.31 s. mem usage=1.20 GB. avail mem=21.20 GB.",
     ev.GraphCaptureEnd, {"elapsed_s": 25.31, "mem_usage_gb": 1.20, "avail_gb": 21.20}),
    ("0.5.9 piecewise", "Capture piecewise CUDA graph end. Time elapsed: 5.00 s. mem usage=0.30 GB. avail mem=20.90 GB.",
     ev.GraphCaptureEnd, {"phase": "piecewise", "elapsed_s": 5.0}),
    ("0.5.15 verify begin", "Capture target verify CUDA graph begin. backend=full, num_tokens_per_bs=4, bs=[1, 2, 4, 8], avail mem=22.10 GB",
     ev.GraphCaptureBegin, {"role": "target", "phase": "verify", "backend": "full", "batch_sizes": (1, 2, 4, 8), "avail_gb": 22.10}),
    ("0.5.15 verify end", "Capture target verify CUDA graph end. elapsed=25.31 s, mem usage=1.20 GB, avail mem=20.90 GB.",
     ev.GraphCaptureEnd, {"role": "target", "phase": "verify", "elapsed_s": 25.31, "mem_usage_gb": 1.2, "avail_gb": 20.9}),
    ("0.5.18 decode begin", "Capture target decode CUDA graph begin. backend=full, num_tokens_per_req=1, bs=[1, 2, 4, 8, 16], avail mem=22.40 GB",
     ev.GraphCaptureBegin, {"phase": "decode", "batch_sizes": (1, 2, 4, 8, 16)}),
    ("0.5.23 decode begin", "Capture target decode CUDA graph begin. backend=full, num_tokens_per_req=1, avail mem=22.40 GB",
     ev.GraphCaptureBegin, {"phase": "decode", "batch_sizes": None, "avail_gb": 22.40}),
    ("0.5.23 decode end", "Capture target decode CUDA graph end. bs=[1, 2, 4, 8, 16], elapsed=25.31 s, mem usage=1.20 GB, avail mem=21.20 GB.",
     ev.GraphCaptureEnd, {"batch_sizes": (1, 2, 4, 8, 16), "elapsed_s": 25.31, "avail_gb": 21.2}),
    ("0.5.14 prefill graph", "Capture target prefill CUDA graph begin. backend=full, num_tokens=[256, 512], avail mem=20.00 GB",
     ev.GraphCaptureBegin, {"phase": "prefill", "batch_sizes": (256, 512)}),
    ("old draft", "Capture draft cuda graph begin. This can take up to several minutes. avail mem=20.00 GB",
     ev.GraphCaptureBegin, {"role": "draft"}),
    ("all summary", "max_total_num_tokens=1234567, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=256, context_len=262144, available_gpu_mem=20.15 GB",
     ev.ReadySummary, {"max_total_num_tokens": 1234567, "max_running_requests": 256, "available_gpu_mem_gb": 20.15}),
    ("0.5.18 capped", "max_running_requests is capped to 8 by the mamba state cache (max_mamba_cache_size=40, 5 state slots per request). To raise it: increase --max-mamba-cache-size",
     ev.ConcurrencyCapped, {"effective": 8, "max_mamba_cache_size": 40, "slots_per_request": 5}),
    ("all ready", "The server is fired up and ready to roll!", ev.ServerReady, {}),
    ("all sigquit launch", "Received sigquit from a child process. It usually means the child failed.", ev.SigquitReceived, {"phase": "launch"}),
    ("all sigquit running", "SIGQUIT received. signum=None, frame=None. It usually means one child failed.", ev.SigquitReceived, {"phase": "running"}),
    ("0.5.13 kill tree", "kill_process_tree called: parent_pid=12345, include_parent=True, pid=12345", ev.KillProcessTree, {"parent_pid": 12345, "pid": 12345}),
    ("0.5.10 child crashed", "Subprocess scheduler_0 (pid=4242) crashed with exit code -9. Triggering SIGQUIT for cleanup...",
     ev.ChildCrashed, {"name": "scheduler_0", "pid": 4242, "exit_code": -9}),
    ("0.5.9 rank dead", "Rank 0 scheduler is dead. Please check if there are relevant logs.", ev.SchedulerDied, {"rank_index": 0}),
    ("0.5.10 rank died", "Rank 1 scheduler died during initialization (exit code: -9). If exit code is -9 (SIGKILL), a common cause is the OS OOM killer.",
     ev.SchedulerDied, {"rank_index": 1, "exit_code": -9}),
    ("0.5.9 watchdog", "Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)", ev.WatchdogTimeout, {"timeout_s": 300.0}),
    ("0.5.5 watchdog", "Watchdog timeout (self.watchdog_timeout=300)", ev.WatchdogTimeout, {"timeout_s": 300.0}),
    ("all health", "Health check failed. Server couldn't get a response from detokenizer for last 20 seconds. tic start time: 12:00:00. last_heartbeat time: 11:59:30",
     ev.HealthCheckFailed, {"seconds": 20}),
    ("0.5.11 retract", "KV cache pool is full. Retract requests. #retracted_reqs: 2, #new_tokens_gained: 4096, #mamba_num_gained: 8, #new_token_ratio: 0.4000 -> 0.5000",
     ev.RetractRequests, {"retracted": 2, "new_tokens_gained": 4096, "mamba_num_gained": 8}),
    ("0.5.14 deprecated flag", "'--mamba-scheduler-strategy' is deprecated and will be removed in a future release. Use '--mamba-radix-cache-strategy' instead.",
     ev.FlagDeprecated, {"old": "--mamba-scheduler-strategy", "new": "--mamba-radix-cache-strategy"}),
    # the real 0.5.23 CPU server's log (../shared/reference/cpu-sglang/real-0.5.23/qwen3_server.log:4)
    ("0.5.23 deprecated flag, free-text replacement", "'--disable-cuda-graph' is deprecated and will be removed in a future release. Use '--cuda-graph-backend-{decode,prefill}=disabled' instead.",
     ev.FlagDeprecated, {"old": "--disable-cuda-graph", "new": "--cuda-graph-backend-{decode,prefill}=disabled"}),
    ("0.5.20 overlapped load", "Load weight end. Committed real weights after CUDA graph capture in 3.20 s (capture overlap window 2.10 s, startup overlap total 4.00 s)",
     ev.WeightsLoaded, {"elapsed_s": 3.20, "mem_usage_gb": None}),
    ("0.5.9 piecewise begin", "Capture piecewise CUDA graph begin. avail mem=22.40 GB", ev.GraphCaptureBegin, {"phase": "piecewise", "avail_gb": 22.40}),
    ("old draft extend", "Capture draft extend cuda graph end. Time elapsed: 3.00 s. mem usage=0.10 GB. avail mem=20.00 GB.",
     ev.GraphCaptureEnd, {"role": "draft", "phase": "extend", "elapsed_s": 3.0, "mem_usage_gb": 0.1}),
    ("0.5.14 draft decode new style", "Capture draft decode CUDA graph begin. backend=full, num_tokens_per_bs=1, bs=[1, 2], avail mem=17.75 GB",
     ev.GraphCaptureBegin, {"role": "draft", "phase": "decode", "batch_sizes": (1, 2)}),
    ("0.5.5 retract", "KV cache pool is full. Retract requests. #retracted_reqs: 1, #new_token_ratio: 0.3000 -> 0.4000",
     ev.RetractRequests, {"retracted": 1, "new_tokens_gained": None, "mamba_num_gained": None}),
    ("all init failed", "Initialization failed. Please see the error messages above.", ev.SchedulerDied, {"rank_index": None}),
    ("0.5.11 PD decode forces no_buffer", "Mamba extra_buffer is disabled because decode disaggregation currently forces chunk cache. Falling back to no_buffer.",
     ev.SettingChanged, {"setting": "mamba_scheduler_strategy", "value": "no_buffer"}),
    ("0.5.9 overlap disabled", "Disabling overlap schedule since mamba no_buffer is not compatible with overlap schedule, try to use --disable-radix-cache if overlap schedule is necessary",
     ev.SettingChanged, {"setting": "disable_overlap_schedule", "value": True}),
    ("0.5.18 post-capture tokens", "Post-capture KV sizing: full_layer_tokens=100, swa_layer_tokens=50", ev.Text, {}),
    ("0.5.23 init parallel begin", "Init parallel begin.", ev.Text, {}),
    ("uvicorn up", "INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)", ev.HttpServerUp, {"port": 30000}),
    ("uvicorn access", 'INFO:     127.0.0.1:40418 - "GET /metrics HTTP/1.1" 200 OK', ev.HttpAccess,
     {"client": "127.0.0.1:40418", "method": "GET", "path": "/metrics", "status": 200}),
    ("0.5.9 deprecated endpoint", "Endpoint '/get_server_info' is deprecated and will be removed in a future version. Please use '/server_info' instead.",
     ev.EndpointDeprecated, {"old": "/get_server_info", "new": "/server_info"}),
]


@pytest.mark.parametrize("name,msg,cls,want", LITERALS, ids=[x[0] for x in LITERALS])
def test_literal_line(name, msg, cls, want):
    e = parse_line(ENV + msg)
    assert type(e) is cls, (name, e)
    assert (e.time, e.rank, e.message) == ("2026-10-01 12:34:56", "TP0", msg)
    for k, v in want.items():
        got = getattr(e, k)
        if isinstance(v, float):
            assert got == pytest.approx(v), k
        else:
            assert got == v, k


@pytest.mark.parametrize("prefix,time,rank", [
    ("[2026-10-01 12:34:56] ", "2026-10-01 12:34:56", None),
    ("[2026-10-01 12:34:56.789 DP1 TP3 EP3] ", "2026-10-01 12:34:56.789", "DP1 TP3 EP3"),   # 0.5.9+ ms
    ("[2026-10-01 12:34:56 DP0 TP1 EP1 PP0] ", "2026-10-01 12:34:56", "DP0 TP1 EP1 PP0"),    # 0.5.5 order
    ("[2026-10-01 12:34:56 DP0 PP1 ATTN_CP0 MOE_DP1 TP2 EP2] ", "2026-10-01 12:34:56", "DP0 PP1 ATTN_CP0 MOE_DP1 TP2 EP2"),
    ("sglang-1  | [2026-10-01 12:34:56 TP0] ", "2026-10-01 12:34:56", "TP0"),                 # supervisor prefix
    ("[2026-10-01 12:34:56 TP0] [2026-10-01 12:34:56 TP0] ", "2026-10-01 12:34:56", "TP0"),   # doubled
])
def test_envelopes(prefix, time, rank):
    e = parse_line(prefix + "Memory pool end. avail mem=22.40 GB")
    assert type(e) is ev.MemoryPoolEnd and (e.time, e.rank, e.avail_gb) == (time, rank, 22.40)


def test_server_args_dump_both_forms_without_eval():
    dc = parse_line("[2026-10-01 12:00:00] server_args=ServerArgs(model_path='Qwen/Qwen3-Next-80B-A3B-Instruct', tp_size=2, "
                    "cuda_graph_config=CudaGraphConfig(decode=Backend(name='full'), bs=[1, 2]), mamba_scheduler_strategy='no_buffer', "
                    "mamba_track_interval=256, speculative_algorithm=None, enable_metrics=True, mem_fraction_static=0.85)")
    assert type(dc) is ev.ServerArgsDump and dc.form == "dataclass" and dc.complete
    assert dc.args["model_path"] == "Qwen/Qwen3-Next-80B-A3B-Instruct"
    assert dc.args["tp_size"] == 2 and dc.args["speculative_algorithm"] is None and dc.args["enable_metrics"] is True
    assert dc.args["cuda_graph_config"].startswith("CudaGraphConfig(")
    assert dc.args["mamba_scheduler_strategy"] == "no_buffer" and dc.args["mem_fraction_static"] == 0.85
    d = parse_line("[2026-10-01 12:00:00] server_args={'model_path': 'Qwen/Qwen3-Next-80B-A3B-Instruct', 'tp_size': 2, "
                   "'cuda_graph_config': {'decode': {'backend': 'full'}}, 'mamba_radix_cache_strategy': 'extra_buffer', 'x': (1, 'a,b')}")
    assert d.form == "dict" and d.complete
    assert d.args["cuda_graph_config"] == {"decode": {"backend": "full"}}
    assert d.args["mamba_radix_cache_strategy"] == "extra_buffer" and d.args["x"] == (1, "a,b")
    cut = parse_line("[2026-10-01 12:00:00] server_args=ServerArgs(model_path='m', tp_size=2, mamba_sch")
    assert not cut.complete and cut.args == {"model_path": "m", "tp_size": 2}


def test_wrapped_decode_line_is_joined_by_name():
    lines = [
        "[2026-10-01 12:34:56 TP0] Decode batch, #running-req: 8, #full token: 20480, full token usage: 0.12,",
        "    mamba num: 16, mamba usage: 0.03, accept len: 2.80, accept rate: 0.60, cuda graph: True,",
        "gen throughput (token/s): 812.05, #queue-req: 2",
        "[2026-10-01 12:34:57 TP0] Memory pool end. avail mem=1.00 GB",
    ]
    evs = list(ev.parse_lines(lines))
    assert [type(e) for e in evs] == [ev.DecodeBatch, ev.MemoryPoolEnd]
    d = evs[0]
    assert (d.running, d.mamba_num, d.accept_len, d.gen_throughput, d.queue) == (8, 16, 2.80, 812.05, 2)
    assert d.line_no == 1 and evs[1].line_no == 4


def test_chained_traceback_keeps_the_final_exception():
    text = "\n".join([
        "[2026-10-01 13:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/x/model_runner.py", line 10, in capture',
        "    run()",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
        "",
        "During handling of the above exception, another exception occurred:",
        "",
        "Traceback (most recent call last):",
        '  File "/x/scheduler.py", line 3277, in run_scheduler_process',
        "Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 2.00 GiB.",
        "Possible solutions:",
        "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)",
        "",
        "[2026-10-01 13:00:00] SIGQUIT received. signum=None, frame=None. It usually means one child failed.",
    ])
    evs = parse_text(text)
    tb = evs[0]
    assert type(tb) is ev.Traceback and tb.exc_type == "Exception" and len(tb.frames) == 2
    assert tb.exc_message.startswith("Capture cuda graph failed") and "Possible solutions:" in tb.exc_message
    assert tb.oom == "torch"
    assert type(evs[-1]) is ev.SigquitReceived


def test_cut_traceback_names_no_cause():
    evs = parse_text("[2026-10-01 13:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
                     '  File "/x/scheduler.py", line 1, in f\n')
    (tb,) = evs
    assert not tb.complete and tb.exc_type is None and tb.exc_message is None and tb.oom is None


@pytest.mark.parametrize("head,origin", [
    ("Scheduler hit an exception:", "Scheduler"), ("DetokenizerManager hit an exception:", "DetokenizerManager"),
    ("TokenizerManager hit an exception:", "TokenizerManager"), ("DataParallelController hit an exception:", "DataParallelController"),
])
def test_child_exception_headers(head, origin):
    (tb,) = parse_text(f"[2026-10-01 13:00:00 DP0 TP0] {head} Traceback (most recent call last):\n"
                       '  File "/x.py", line 1, in f\nRuntimeError: Not enough memory. Please try to increase --mem-fraction-static.\n')
    assert (tb.origin, tb.header, tb.exc_type, tb.oom, tb.rank) == (origin, head, "RuntimeError", "sglang", "DP0 TP0")


@pytest.mark.parametrize("message", [
    "Hybrid (mamba/linear-attention) state cache is too small to serve any requests. max_mamba_cache_size=4, mamba_ratio=5, resulting max_num_reqs=0. Try: (1) reduce --max-running-requests",
    "Not enough GPU memory for hybrid (mamba/linear-attention) state cache. Computed max_mamba_cache_size=0 (total_rest_memory=1.00 GB, mamba_cache_per_req=80.00 MB). Try: ...",
    "Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static=0.8. Raise --mem-fraction-static above 0.850 (minimum viable = 1 - available/pre = 0.8500).",
])
def test_sglang_memory_error_family_is_oom(message):
    assert ev.oom_kind("RuntimeError", message) == "sglang"
    assert ev.oom_kind("ValueError", "mamba extra_buffer is not compatible with --disable-radix-cache") is None


def test_sglang_not_enough_memory_is_oom():
    tb = parse_text("RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: mem_fraction_static=0.9\n")[0]
    assert tb.exc_type == "RuntimeError" and tb.oom == "sglang"


def test_ansi_and_carriage_returns_never_reach_the_text():
    raw = "\x1b[1;33m'--mamba-scheduler-strategy' is deprecated and will be removed in a future release. Use '--mamba-radix-cache-strategy' instead.\x1b[0m"
    e = parse_line(raw)
    assert type(e) is ev.FlagDeprecated and "\x1b" not in e.text
    assert display_text("a 10%|#\rCapturing: 100%|##| 2/2 [00:01<00:00]\r") == "Capturing: 100%|##| 2/2 [00:01<00:00]"
    assert display_text("x\x9b31mred\x1b]0;title\x07 \x00\tend") == "xred  end"
    assert display_text(b"x\x1b[31mred\xff\n") == "xred\ufffd"  # invalid UTF-8 replaced


CONTROL = set(map(chr, list(range(0x20)) + list(range(0x7F, 0xA0))))

pieces = st.sampled_from([
    "[2026-10-01 12:34:56 TP0] ", "Decode batch, #running-req: ", "Traceback (most recent call last):",
    '  File "x.py", line 3, in f', "ValueError: bad", "\x1b[31m", "\x1b]0;t\x07", "\r", "\n", "\t", "",
    "Mamba Cache is allocated. conv_state size: ", "server_args=ServerArgs(a=", "{'a': [", "Capture cuda graph ",
    "max_total_num_tokens=", "est uncap acc len: 1.0 [", "%|##| 3/", "    ", "KV Cache is allocated. #tokens: ",
])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.binary(max_size=200), st.text(max_size=200), pieces), max_size=30))
def test_no_input_raises_and_no_control_reaches_text(chunks):
    p = LogParser()
    out = []
    for c in chunks:
        out += p.feed(c)
    out += p.flush()
    for e in out:
        assert not (set(e.text) & CONTROL - {"\n"})
        if isinstance(e, ev.BatchLine):
            e.as_dict()
            e.graph, e.running
        if isinstance(e, ev.DecodeBatch):
            e.accept_len, e.est_uncap_accept_len


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=2000))
def test_random_bytes_as_a_text(data):
    for e in parse_text(data):
        assert not (set(e.text) & CONTROL - {"\n"})
    parse_line(data)


def test_one_mib_line_and_endless_traceback():
    big = "[2026-10-01 12:34:56 TP0] Decode batch, " + "x: 1, " * (1 << 18)
    (e,) = parse_text(big)
    assert type(e) is ev.DecodeBatch and len(e.fields) == 1
    p = LogParser()
    out = p.feed("Traceback (most recent call last):")
    for _ in range(5000):
        out += p.feed('  File "x.py", line 1, in f')
    out += p.flush()
    assert sum(len(x.text.split("\n")) for x in out) == 5001


def _sig(events):
    return [(type(e).__name__, e.text, e.message, e.time, e.rank, e.line_no, e.level) for e in events]


REAL_LINES = [ln for case in sorted(CASES.iterdir()) if case.is_dir()
              for f in sorted(case.iterdir()) if f.name.startswith("input")
              for ln in f.read_text(errors="replace").splitlines(keepends=True)]


@settings(max_examples=80, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(REAL_LINES), pieces, st.text(max_size=80)), max_size=40),
       st.lists(st.integers(min_value=1, max_value=7), min_size=1, max_size=10))
def test_feed_many_equals_feed_per_line(lines, cuts):
    one = LogParser()
    a = [e for line in lines for e in one.feed(line)] + one.flush()
    many = LogParser()
    b, i, k = [], 0, 0
    while i < len(lines):
        step = cuts[k % len(cuts)]
        b += many.feed_many(lines[i:i + step])
        i += step
        k += 1
    b += many.flush()
    assert _sig(a) == _sig(b)
    assert _sig(a) == _sig(parse_text("".join(x if x.endswith("\n") else x + "\n" for x in lines))) or any(
        "\n" in x[:-1] or "\r" in x for x in lines)


def _full(events):
    return [(type(e).__name__, {k: v for k, v in vars(e).items() if not k.startswith("_")})
            for e in events]


@settings(max_examples=80, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(REAL_LINES), pieces, st.text(max_size=80)), max_size=40))
def test_hot_path_equals_general_path(lines):
    """feed_many's inline path for clean str lines gives the same events, field for field, as
    the general path that bytes lines take (decoded, control-stripped, envelope split)."""
    lines = [x for x in lines if "\r" not in x and "\n" not in x[:-1]]
    hot, general = LogParser(), LogParser()
    a = hot.feed_many(lines) + hot.flush()
    b = general.feed_many([x.encode("utf-8", "surrogatepass") for x in lines]) + general.flush()
    assert _full(a) == _full(b)


def test_hot_path_equals_general_path_on_real_logs():
    hot, general = LogParser(), LogParser()
    a = hot.feed_many(REAL_LINES) + hot.flush()
    b = general.feed_many([x.encode() for x in REAL_LINES]) + general.flush()
    assert len(a) > 50 and _full(a) == _full(b)


def test_peek_shows_the_pending_record_without_consuming_it():
    p = LogParser()
    assert p.peek() is None
    assert p.feed("[2026-10-01 12:00:00 TP0] Scheduler debug info:\n") == []
    first = p.peek()
    assert type(first) is ev.Text and first.message == "Scheduler debug info:"
    assert p.feed("    #running-req: 3\n") == []
    joined = p.peek()
    assert joined.text.count("\n") == 1 and "#running-req: 3" in joined.message
    assert p.peek() == joined
    (done,) = p.flush()
    assert done == joined and p.peek() is None
    p.feed("[2026-10-01 12:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):")
    tb = p.peek()
    assert type(tb) is ev.Traceback and not tb.complete
    p.feed("ValueError: x")
    assert p.peek().exc_type == "ValueError" and p.flush()[0].exc_type == "ValueError"


def test_sglang_04_batch_lines_with_a_period():
    """SGLang 0.4 (Dec 2024, sgl-project/sglang issue #2431 / #4236 as in
    tests/data/logs/request-error.log) printed ``Decode batch. #running-req: ...``."""
    lines = [ln for ln in (Path(__file__).parent / "data" / "logs" / "request-error.log").read_text().splitlines()
             if "batch. #" in ln]
    assert lines
    for e in parse_text("\n".join(lines)):
        assert type(e) in (ev.DecodeBatch, ev.PrefillBatch)
        assert e.running is not None and e.queue == 0 and e.token_usage is not None
    (d,) = parse_text("[2024-12-10 21:23:46 TP0] Decode batch. #running-req: 1, #token: 2695, "
                      "token usage: 0.03, gen throughput (token/s): 46.48, largest-len: 0, #queue-req: 0, ")
    assert (d.running, d.token, d.token_usage, d.gen_throughput) == (1, 2695, 0.03, 46.48)


def test_torch_oom_numbers_in_each_form_of_the_message():
    """PyTorch's OOM message (c10/cuda/CUDACachingAllocator.cpp): sizes in bytes/KiB/MiB/GiB
    (powers of 1024), "this process has" or, where PyTorch cannot tell its own process,
    "Process N has" per process; expected GiB computed here from the printed numbers."""
    from mambaconsole.sglang.events import torch_oom

    container = ("CUDA out of memory. Tried to allocate 1.25 GiB. GPU 1 has a total capacity of 93.02 GiB of which "
                 "1.18 GiB is free. Process 2752205 has 91.82 GiB memory in use. Process 77 has 512.00 MiB memory "
                 "in use. Of the allocated memory 90.63 GiB is allocated by PyTorch, and 120.54 MiB is reserved by "
                 "PyTorch but unallocated.")
    o = torch_oom(container)
    assert (o.gpu, o.tried_gib, o.capacity_gib, o.free_gib) == (1, 1.25, 93.02, 1.18)
    assert o.in_use_gib == 91.82 + 512 / 1024 and o.allocated_gib == 90.63
    assert o.reserved_unallocated_gib == 120.54 / 1024 and o.fragmentation is False
    full = ("CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 8.00 GiB of which 0 bytes "
            "is free. Of the allocated memory 7.51 GiB is allocated by PyTorch, and 315.90 MiB is reserved by "
            "PyTorch but unallocated.")
    o = torch_oom(full)
    assert (o.tried_gib, o.free_gib, o.in_use_gib) == (20 / 1024, 0.0, None)
    assert o.fragmentation is True  # 315.90 MiB cached, unallocated >= 20 MiB asked
    assert "fragmentation (expandable_segments may help)" in o.describe()
    # the first sentence only (older PyTorch, a cut line): what it says, the rest None
    o = torch_oom("CUDA out of memory. Tried to allocate 980.00 KiB")
    assert o.tried_gib == 980 / (1 << 20) and o.capacity_gib is None and o.fragmentation is None
    assert torch_oom("Not enough memory. Please try to increase --mem-fraction-static.") is None
