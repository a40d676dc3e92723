"""Input as people paste it, by kind, on synthetic variants (the bank-2 cases are one example
of each; these check that the readers generalise): every real case log wrapped in each
container / supervisor / editor / Markdown wrapper reads as the clean log does; batch-line
fragments; a line cut inside its rank tag; outcome, failure phase and root cause from
evidence; the draft model's load; the Mamba pool from usage pairs; nvidia-smi process
panels."""

from __future__ import annotations

import pytest

from mambaconsole.errors import ConsoleError
from mambaconsole.sglang import events as E
from mambaconsole.sglang.capacity import Sample, pool_from_usage
from mambaconsole.sglang.inspect import inspect_text
from mambaconsole.sglang.paste import unwrap_line
from fixtures.sglang_cases import CASES

LOGS = sorted(CASES.glob("case-*/input.log")) + sorted((CASES / "bank-2").glob("case-*/input.log"))

WRAPPERS = {
    "compose": lambda i, ln: f"sglang-1  | {ln}",
    "cri": lambda i, ln: f"2026-11-30T10:00:{i % 60:02d}.123456789Z stdout F {ln}",
    "kubectl-ts": lambda i, ln: f"2026-11-30T10:00:{i % 60:02d}.000Z {ln}",
    "ray": lambda i, ln: f"(SchedulerActor pid=4242, ip=10.1.2.3) {ln}",
    "editor": lambda i, ln: f"{i + 1:>4} | {ln}",
    "journald": lambda i, ln: f"Nov 30 10:00:00 gpu-node sglang[311]: {ln}",
    "quote": lambda i, ln: f"> {ln}",
}

KEYS = ("kind", "ranks", "boots", "outcome", "failure", "memory_gb", "mamba_slots", "concurrency", "last_decode",
        "spec")


def _facts(text: str) -> dict:
    r = inspect_text(text)
    return {k: r[k] for k in KEYS}


@pytest.mark.parametrize("wrapper", sorted(WRAPPERS))
def test_wrapped_logs_read_as_the_clean_ones(wrapper):
    wrap = WRAPPERS[wrapper]
    for path in LOGS:
        clean = path.read_text()
        lines = clean.split("\n")
        wrapped = "\n".join(wrap(i, ln) if ln else ln for i, ln in enumerate(lines))
        assert _facts(wrapped) == _facts(clean), (wrapper, path.parent.name)


def test_markdown_fences_and_prose_around_the_lines():
    log = (CASES / "case-19" / "input.log").read_text()
    pasted = "Hi, the server dies at start:\n\n```log\n" + log + "\n```\n\nAny idea? Thanks!\n"
    assert _facts(pasted) == _facts(log)


def test_unwrap_line_keeps_indentation_and_sglang_lines():
    assert unwrap_line('sglang-1  |   File "/x/sglang/srt/a.py", line 3, in f') == '  File "/x/sglang/srt/a.py", line 3, in f'
    assert unwrap_line("[2026-01-01 00:00:00 TP0] Load weight end.") == "[2026-01-01 00:00:00 TP0] Load weight end."
    assert unwrap_line("```") == "" and unwrap_line("~~~text") == ""
    assert unwrap_line("12\tValueError: x") == "ValueError: x"
    # prose with a bar is no compose prefix; a number that is a value is no line number
    assert unwrap_line("GPU memory | usage") == "GPU memory | usage"
    assert unwrap_line("42 requests served") == "42 requests served"


# --- batch-line fragments ----------------------------------------------------------------

@pytest.mark.parametrize("line,cls", [
    ("accept len: 2.41, accept rate: 0.35, cuda graph: False, gen thr", E.DecodeBatch),
    ("#running-req: 3, #full token: 9000, full token usage: 0.10, mamba num: 6, mamba usage: 0.50", E.DecodeBatch),
    ("n-seq: 1, #new-token: 512, #cached-token: 0, token usage: 0.02, #running-req: 0, #queue-req: 0", E.PrefillBatch),
    ("ept len: 3.10, accept rate: 0.52, cuda graph: True", E.DecodeBatch),
])
def test_batch_fragments(line, cls):
    ev = E.parse_text(line)[0]
    assert type(ev) is cls and ev.fragment


def test_fragment_values_and_unknowns():
    ev = E.parse_text("accept len: 2.41, accept rate: 0.35, cuda graph: False, gen thr")[0]
    assert (ev.accept_len, ev.accept_rate, ev.graph, ev.gen_throughput, ev.running) == (2.41, 0.35, False, None, None)


@pytest.mark.parametrize("line", [
    "the accept len: 2.5 we saw was lower than expected, and the rate too",
    "#running-req: 4",
    "note: accept len: 2.1",
])
def test_prose_is_not_a_batch_line(line):
    assert type(E.parse_text(line)[0]) is E.Text


# --- a line cut inside its envelope ---------------------------------------------------------

@pytest.mark.parametrize("line,rank", [
    ("[2026-05-05 04:41:51 DP2 TP2 E", "DP2 TP2"),
    ("[2026-05-05 04:41:51 TP13 EP", "TP13"),
    ("[2026-05-05 04:41:51 DP1 T", "DP1"),
    ("[2026-05-05 04:41:51", None),
])
def test_line_cut_inside_rank_tag(line, rank):
    ev = E.parse_text(line)[0]
    assert (ev.time, ev.rank) == ("2026-05-05 04:41:51", rank)
    r = inspect_text(line)
    assert r["ranks"] == ([rank] if rank else []) and r["outcome"] == "unknown"


# --- outcome from evidence ----------------------------------------------------------------

T = "[2026-01-01 10:00:{:02d}{}] {}"


def log(*msgs, rank=""):
    return "\n".join(T.format(i, rank, m) for i, m in enumerate(msgs)) + "\n"


def test_ready_from_startup_complete_and_200():
    for path in ("/health", "/generate", "/health_generate"):
        text = log("Load weight end. type=X, avail mem=10.00 GB, mem usage=5.00 GB.",
                   "INFO:     Application startup complete.",
                   f'INFO:     127.0.0.1:5000 - "GET {path} HTTP/1.1" 200 OK')
        assert inspect_text(text)["outcome"] == "ready", path


def test_not_ready_without_a_200_on_a_serving_path():
    text = log("Load weight end. type=X, avail mem=10.00 GB, mem usage=5.00 GB.",
               "INFO:     Application startup complete.",
               'INFO:     127.0.0.1:5000 - "GET /health HTTP/1.1" 503 Service Unavailable',
               'INFO:     127.0.0.1:5000 - "GET /v1/models HTTP/1.1" 200 OK')
    assert inspect_text(text)["outcome"] == "starting"


def test_ready_from_batches_served():
    text = "Decode batch, #running-req: 2, #token: 900, token usage: 0.01, cuda graph: True, gen throughput (token/s): 80.00, #queue-req: 0\n"
    assert inspect_text(text)["outcome"] == "ready"


def test_exception_after_batches_is_runtime():
    text = log("Prefill batch, #new-seq: 1, #new-token: 10, #cached-token: 0, token usage: 0.01, #running-req: 0, #queue-req: 0",
               "Scheduler hit an exception: Traceback (most recent call last):", rank=" TP1") \
        + '  File "/sgl/python/sglang/srt/managers/scheduler.py", line 1, in somewhere\nRuntimeError: boom\n'
    f = inspect_text(text)["failure"]
    assert (f["phase"], f["exception"], f["rank"]) == ("runtime", "RuntimeError", "TP1")


# --- failure phase from the frames ------------------------------------------------------------

OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
       "79.10 GiB of which 1.00 GiB is free.")


def tb(*functions):
    out = ["Traceback (most recent call last):"]
    for fn in functions:
        mod, func = fn.split(":")
        out.append(f'  File "/usr/lib/python3/site-packages/sglang/srt/{mod}", line 10, in {func}')
        out.append("    something()")
    return "\n".join(out + [OOM]) + "\n"


@pytest.mark.parametrize("frames,phase", [
    (("managers/scheduler.py:run_scheduler_process", "managers/scheduler.py:__init__",
      "managers/tp_worker.py:__init__", "model_executor/model_runner.py:__init__",
      "model_executor/model_runner.py:load_model", "model_loader/loader.py:load_model"), "load"),
    (("managers/scheduler.py:run_scheduler_process", "managers/scheduler.py:__init__",
      "managers/scheduler.py:init_model_worker"), "startup"),
    (("managers/scheduler.py:run_scheduler_process", "managers/scheduler.py:__init__",
      "model_executor/model_runner.py:init_memory_pool", "mem_cache/memory_pool.py:__init__"), "startup"),
    (("model_executor/model_runner.py:init_device_graphs", "model_executor/cuda_graph_runner.py:capture",
      "models/qwen3_next.py:forward"), "startup"),
    (("managers/scheduler.py:run_scheduler_process", "managers/scheduler.py:event_loop_overlap",
      "managers/scheduler.py:run_batch", "models/qwen3_next.py:forward"), "runtime"),
])
def test_oom_phase_from_frames(frames, phase):
    r = inspect_text(tb(*frames))
    assert r["outcome"] == "oom" and r["failure"]["phase"] == phase


def test_oom_phase_frames_win_over_an_unfinished_load():
    """Weights began loading on one rank, the OOM's frames are in pool allocation: startup."""
    text = log("Load weight begin. avail mem=70.00 GB", rank=" TP0") + tb(
        "managers/scheduler.py:__init__", "model_executor/model_runner.py:init_memory_pool")
    assert inspect_text(text)["failure"]["phase"] == "startup"


def test_oom_with_graph_pools_is_after_capture():
    msg = OOM[:-1] + (". Process 7 has 78.00 GiB memory in use. Of the allocated memory 70.00 GiB is allocated by "
                      "PyTorch, with 12.00 MiB allocated in private pools (e.g., CUDA Graphs), and 1.00 GiB is "
                      "reserved by PyTorch but unallocated.")
    r = inspect_text(msg + "\n")
    assert r["failure"]["phase"] == "runtime" and r["failure"]["oom"]["graph_pools_gib"] == pytest.approx(12 / 1024)
    plain = OOM[:-1] + (". Of the allocated memory 70.00 GiB is allocated by PyTorch, and 1.00 GiB is reserved by "
                        "PyTorch but unallocated.")
    r = inspect_text(plain + "\n")
    assert r["failure"]["phase"] != "runtime" and r["failure"]["oom"]["graph_pools_gib"] == 0.0


# --- root cause: SGLang's exception, not a harness's ---------------------------------------------

@pytest.mark.parametrize("harness_first", [True, False])
def test_harness_exception_is_not_the_root_cause(harness_first):
    harness = "RuntimeError: benchmark client gave up after 600 s\n\n"
    sglang = ("TokenizerManager hit an exception:\n  ...\n  ValueError: tokenizer config is invalid\n\n")
    text = (harness + sglang) if harness_first else (sglang + harness)
    f = inspect_text(text)["failure"]
    assert (f["exception"], f["message"]) == ("ValueError", "tokenizer config is invalid")


def test_paraphrased_traceback_under_a_process_header():
    text = ("[2026-01-01 10:00:00] DataParallelController hit an exception:\n"
            "  ... run_data_parallel_controller_process -> launch_tensor_parallel_group\n"
            "  KeyError: 'dp_rank'\n")
    f = inspect_text(text)["failure"]
    assert (f["exception"], f["message"]) == ("KeyError", "'dp_rank'")


def test_health_503_then_crash_is_startup():
    text = (log('INFO:     127.0.0.1:1 - "GET /health HTTP/1.1" 503 Service Unavailable')
            + "DetokenizerManager hit an exception:\n  RuntimeError: no tokenizer\n")
    r = inspect_text(text)
    assert (r["outcome"], r["failure"]["phase"], r["failure"]["rank"]) == ("crashed", "startup", None)


# --- the draft model's weights ---------------------------------------------------------------

LOAD = "Load weight end. elapsed=1.00 s, type={}, avail mem={} GB, mem usage={} GB."


@pytest.mark.parametrize("draft", ["DeepseekV3ForCausalLMNextN", "LlamaForCausalLMEagle3", "Qwen3_5ForCausalLMMTP",
                                   "Eagle3DeepseekV2ForCausalLM", "DSparkDraftModel"])
def test_draft_load_is_not_the_target(draft):
    text = log("Load weight begin. avail mem=40.00 GB", LOAD.format("TargetForCausalLM", "20.00", "19.50"),
               "Load weight begin. avail mem=20.00 GB", LOAD.format(draft, "18.00", "2.00"),
               "max_total_num_tokens=1000, chunked_prefill_size=2048, max_prefill_tokens=16384, "
               "max_running_requests=8, context_len=4096, available_gpu_mem=1.00 GB", rank=" TP0")
    r = inspect_text(text)
    assert r["boots"] == 1 and r["memory_gb"]["weights"] == 19.50 and r["memory_gb"]["avail_after_load"] == 20.00
    assert r["spec"]["enabled"] is True


def test_same_model_loaded_again_is_a_new_boot():
    text = log(LOAD.format("TargetForCausalLM", "20.00", "19.50"), LOAD.format("TargetForCausalLM", "21.00", "19.40"),
               rank=" TP0")
    r = inspect_text(text)
    assert r["boots"] == 2 and r["memory_gb"]["weights"] == 19.40


def test_real_0523_spec_log_is_one_boot():
    """The real SGLang 0.5.23 run with an MTP draft (shared/reference/cpu-sglang): the
    Qwen3NextForCausalLMMTP load is the same start's draft model."""
    r = inspect_text((CASES.parent / "logs" / "real-0.5.23-qspec_server.log").read_text())
    assert r["boots"] == 1 and r["spec"]["enabled"] is True


def test_finished_setup_without_draft_is_spec_off():
    text = log(LOAD.format("TargetForCausalLM", "20.00", "19.50"),
               "max_total_num_tokens=1000, chunked_prefill_size=2048, max_prefill_tokens=16384, "
               "max_running_requests=8, context_len=4096, available_gpu_mem=1.00 GB", rank=" TP0")
    assert inspect_text(text)["spec"]["enabled"] is False
    # before the set-up is finished, nothing is known
    assert inspect_text(log(LOAD.format("TargetForCausalLM", "20.00", "19.50")))["spec"]["enabled"] is None


# --- the Mamba pool from usage pairs ---------------------------------------------------------

@pytest.mark.parametrize("pairs,pool", [
    ([(3, 0.19), (6, 0.38)], 16),
    ([(5, 0.12)], None),          # 5/40 .. 5/43 all print 0.12: not determined
    ([(5, 0.12), (9, 0.22)], 41),  # 9/41 = 0.2195 prints 0.22; 9/40 = 0.225, 9/42 = 0.214 do not
    ([(7, 0.35), (12, 0.60)], 20),
    ([(1, 0.02)], None),          # 1/40..1/66 all print 0.02: not determined
    ([], None),
])
def test_pool_from_usage(pairs, pool):
    assert pool_from_usage(Sample(running=1, mamba_num=n, mamba_usage=u) for n, u in pairs) == pool


# --- nvidia-smi inside other text -------------------------------------------------------------

def test_smi_table_inside_log_lines():
    table = """+-----------------------------------------------------------------------------+
| NVIDIA-SMI 535.104.05   Driver Version: 535.104.05   CUDA Version: 12.2     |
|-------------------------------+----------------------+----------------------+
| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |
|===============================+======================+======================|
|   0  NVIDIA A100-SXM...  On   | 00000000:07:00.0 Off |                    0 |
| N/A   33C    P0    62W / 400W |  66601MiB / 81920MiB |     12%      Default |
+-------------------------------+----------------------+----------------------+
| Processes:                                                                  |
|  GPU   GI   CI        PID   Type   Process name                  GPU Memory |
|        ID   ID                                                   Usage      |
|=============================================================================|
|    0   N/A  N/A      4242      C   python3                         66598MiB |
+-----------------------------------------------------------------------------+"""
    clean = inspect_text(table)
    wrapped = inspect_text("\n".join(f"2026-11-30 10:00:00,123 INFO monitor.py:12 {ln}" for ln in table.split("\n")))
    assert clean["gpus"] == wrapped["gpus"] and clean["gpus"][0]["memory_used_mib"] == 66601


def test_nothing_of_sglang_is_refused():
    with pytest.raises(ConsoleError):
        inspect_text("just some words\nand more words about GPUs\n")


@pytest.mark.parametrize("text", [
    "[2026-01-01 10:00:00 TP0] max_running_requests is capped to 2 by the mamba state cache (max_mamba_cache_size=10,\n"
    "5 state slots per request).\n",
    "[2026-01-01 10:00:00 TP0] max_running_requests is capped to 2 by the mamba state cache (max_mamba_cache_size=10, 5 state slots\n"
    "per request). To raise it: increase --max-mamba-cache-size.\n",
    "[2026-01-01 10:00:00 TP0] WARNING kv_cache_configurator.py:120: max_running_requests is capped to 2 by the mamba state cache (max_mamba_c\n"
    "ache_size=10, 5 state slots per request).\n",
])
def test_wrapped_cap_message_keeps_slots_per_request(text):
    r = inspect_text(text)
    assert (r["concurrency"]["effective"], r["concurrency"]["slots_per_request"], r["mamba_slots"]) == (2, 5, 10)


def test_scheduler_init_frames_after_http_up_are_startup():
    """HTTP came up, then the scheduler's exception whose frames are in Scheduler.__init__ (a
    late-starting DP rank): start-up, not runtime."""
    text = (log("INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)")
            + "[2026-01-01 10:00:09 DP1 TP1] Scheduler hit an exception: Traceback (most recent call last):\n"
            + '  File "/x/sglang/srt/managers/scheduler.py", line 3, in run_scheduler_process\n    s()\n'
            + '  File "/x/sglang/srt/managers/scheduler.py", line 9, in __init__\n    self.init_model_worker()\n'
            + '  File "/x/sglang/srt/managers/scheduler.py", line 12, in init_model_worker\n    w()\n'
            + "RuntimeError: NCCL error\n")
    f = inspect_text(text)["failure"]
    assert (f["phase"], f["rank"]) == ("startup", "DP1 TP1")


def test_oom_with_graph_pools_during_startup_is_not_load():
    msg = (OOM[:-1] + ". Of the allocated memory 70.00 GiB is allocated by PyTorch, with 12.00 MiB allocated in "
           "private pools (e.g., CUDA Graphs), and 1.00 GiB is reserved by PyTorch but unallocated.")
    text = log("Load weight begin. avail mem=70.00 GB") + msg + "\n"
    assert inspect_text(text)["failure"]["phase"] == "startup"
