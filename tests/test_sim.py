"""The simulated SGLang node, driven as a user would: the seed scenario's launch commands.

Expected texts come from real SGLang (``tests/data/sim/real-*.txt``: captured from SGLang 0.5.11
and 0.5.23 resolving the same argv on CPU) or from the formats and literal examples of
``shared/reference/sglang-observables.md``; expected sizes are computed here from Qwen3.6-27B's
config.json numbers, not taken from the simulator.
"""

from __future__ import annotations

import json
import re
import signal
import time
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from mambaconsole.sim import demo

DATA = Path(__file__).parent / "data" / "sim"
VERSIONS = ["0.5.11", "0.5.23"]

# Qwen3.6-27B config.json (text_config): 64 layers, full_attention_interval 4,
# linear_num_key_heads 16, linear_key_head_dim 128, linear_num_value_heads 48,
# linear_value_head_dim 128, linear_conv_kernel_dim 4, num_key_value_heads 4, head_dim 256,
# mamba_ssm_dtype float32 (conv state bf16)
LINEAR_LAYERS = 64 - 64 // 4
CONV_PER_LAYER = (48 * 128 + 2 * 16 * 128) * (4 - 1) * 2
SSM_PER_LAYER = 48 * 128 * 128 * 4
SLOT = LINEAR_LAYERS * (CONV_PER_LAYER + SSM_PER_LAYER)
KV_PER_TOKEN = 16 * 4 * 256 * 2 * 2
GIB = 1 << 30

ENVELOPE = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] (.*)$")


def fmt_regex(fmt: str) -> re.Pattern:
    """A reference format row (``{n}``, ``{x:.2f}``, ``{s}``, ``{b}``, ``{list}``) as a regex."""
    out, i = "", 0
    for m in re.finditer(r"\{(n|x:\.2f|x:\.4f|s|b|list|pid|torch dtype)\}", fmt):
        out += re.escape(fmt[i:m.start()])
        out += {"n": r"-?\d+", "x:.2f": r"-?\d+\.\d\d", "x:.4f": r"\d+\.\d{4}", "s": r"\S+", "b": r"(?:True|False)",
                "list": r"\[[\d, ]*\]", "pid": r"\d+", "torch dtype": r"torch\.\w+"}[m.group(1)]
        i = m.end()
    return re.compile("^" + out + re.escape(fmt[i:]) + "$")


# Formats copied from sglang-observables.md §3.1, §2, §4.4, §5.1 (literal text)
FORMATS = {
    "0.5.11": [
        "Init torch distributed begin.",
        "Init torch distributed ends. elapsed={x:.2f} s, mem usage={x:.2f} GB",
        "Load weight begin. avail mem={x:.2f} GB",
        "Load weight end. elapsed={x:.2f} s, type={s}, avail mem={x:.2f} GB, mem usage={x:.2f} GB.",
        "KV Cache is allocated. #tokens: {n}, K size: {x:.2f} GB, V size: {x:.2f} GB",
        "Memory pool end. avail mem={x:.2f} GB",
        "Capture cuda graph begin. This can take up to several minutes. avail mem={x:.2f} GB",
        "Capture cuda graph end. Time elapsed: {x:.2f} s. mem usage={x:.2f} GB. avail mem={x:.2f} GB.",
    ],
    "0.5.23": [
        "Init parallel begin.",
        "Init parallel ends. elapsed={x:.2f} s",
        "Memory baseline taken. mem usage={x:.2f} GB",
        "Load weight begin. avail mem={x:.2f} GB",
        "Load weight end. elapsed={x:.2f} s, type={s}, avail mem={x:.2f} GB, mem usage={x:.2f} GB.",
        "KV Cache is allocated. dtype: {torch dtype}, #tokens: {n}, K size: {x:.2f} GB, V size: {x:.2f} GB",
        "Memory pool end. avail mem={x:.2f} GB",
        "Capture target verify CUDA graph begin. backend={s} num_tokens_per_req={n}, avail mem={x:.2f} GB",
        "Capture target verify CUDA graph end. bs={list}, elapsed={x:.2f} s, mem usage={x:.2f} GB, avail mem={x:.2f} GB.",
    ],
}
COMMON = [
    "Mamba Cache is allocated. max_mamba_cache_size: {n}, conv_state size: {x:.2f}GB, ssm_state size: {x:.2f}GB "
    "intermediate_ssm_state_cache size: {x:.2f}GB intermediate_conv_window_cache size: {x:.2f}GB ",
    "max_total_num_tokens={n}, chunked_prefill_size={n}, max_prefill_tokens={n}, max_running_requests={n}, "
    "context_len={n}, available_gpu_mem={x:.2f} GB",
    "The server is fired up and ready to roll!",
]
# Decode D-D (0.5.11-0.5.15 layout, also 0.5.23 without the optional extras) and prefill 0.5.11+
DECODE = fmt_regex(
    "Decode batch, #running-req: {n}, #full token: {n}, full token usage: {x:.2f}, mamba num: {n}, "
    "mamba usage: {x:.2f}, accept len: {x:.2f}, accept rate: {x:.2f}, cuda graph: {b}, "
    "gen throughput (token/s): {x:.2f}, #queue-req: {n}"
)
PREFILL = fmt_regex(
    "Prefill batch, #new-seq: {n}, #new-token: {n}, #cached-token: {n}, full token usage: {x:.2f}, "
    "mamba usage: {x:.2f}, #running-req: {n}, #queue-req: {n}, #pending-token: {n}, cuda graph: {b}, "
    "input throughput (token/s): {x:.2f}"
)


def messages(text: str) -> list[str]:
    return [m.group(1) for line in text.splitlines() if (m := ENVELOPE.match(line))]


def test_format_regexes_match_the_reference_examples():
    # the regex helper itself, on literal examples from the reference
    assert fmt_regex(FORMATS["0.5.11"][3]).match(
        "Load weight end. elapsed=12.40 s, type=LlamaForCausalLM, avail mem=124.61 GB, mem usage=14.96 GB.")
    assert fmt_regex(FORMATS["0.5.11"][6]).match(
        "Capture cuda graph begin. This can take up to several minutes. avail mem=22.40 GB")
    assert fmt_regex(FORMATS["0.5.23"][1]).match("Init parallel ends. elapsed=3.02 s")
    assert fmt_regex(FORMATS["0.5.23"][8].replace("verify", "decode")).match(
        "Capture target decode CUDA graph end. bs=[1, 2, 4, 8, 16], elapsed=25.31 s, mem usage=1.20 GB, avail mem=21.20 GB.")
    assert DECODE.match(
        "Decode batch, #running-req: 8, #full token: 20480, full token usage: 0.12, mamba num: 16, mamba usage: 0.03, "
        "accept len: 2.80, accept rate: 0.60, cuda graph: True, gen throughput (token/s): 812.05, #queue-req: 0")
    assert PREFILL.match(
        "Prefill batch, #new-seq: 2, #new-token: 8192, #cached-token: 1024, full token usage: 0.05, mamba usage: 0.02, "
        "#running-req: 6, #queue-req: 1, #pending-token: 4096, cuda graph: False, input throughput (token/s): 23456.78")


# ------------------------------------------------------------------ outcome: OOM


@pytest.mark.parametrize("version", VERSIONS)
def test_extra_buffer_with_default_caps_ooms_while_allocating_the_mamba_cache(sim_process, free_port, version):
    run = sim_process(version, demo.first_failing_argv(version, port=free_port))
    assert run.wait() == -signal.SIGKILL  # SGLang's launcher SIGKILLs itself: a shell sees 137
    text = run.text()
    msgs = messages(text)
    crash = [m for m in msgs if m.startswith("Scheduler hit an exception: ")]
    assert crash == ["Scheduler hit an exception: Traceback (most recent call last):"]
    oom = [line for line in text.splitlines() if line.startswith("torch.OutOfMemoryError: ")]
    assert len(oom) == 1
    if version == "0.5.11":
        assert "Mamba Cache is allocated." not in text
        # the failing allocation is the fixed-size speculative SSM cache: 17 x 4 draft tokens x SSM state
        inter = (16 + 1) * 4 * LINEAR_LAYERS * SSM_PER_LAYER
        assert oom[0].startswith(f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {inter / GIB:.2f} GiB. "
                                 "GPU 0 has a total capacity of 96.00 GiB of which ")
        assert "intermediate_ssm_state_cache = torch.zeros(" in text
    else:
        # 0.5.23 solves the Mamba pool and the intermediate caches jointly
        # (kv_cache_configurator.py _handle_max_mamba_cache), so the smaller pool fits and the
        # KV cache runs out: 5 slots per request (3 + 2 overlap tracking), 4 draft tokens
        slot = LINEAR_LAYERS * (SSM_PER_LAYER + CONV_PER_LAYER)
        pre = (96 * GIB - int(0.55 * GIB)) / GIB
        rest = pre - int(51.20 * GIB) / GIB - pre * (1 - 0.9)
        size = int((rest * 0.9 / 1.9 * GIB - slot * 5) // (slot * (1 + 4 / 5)))
        reqs = min(16, size // 5)
        rest -= (slot * (reqs + 1) * 4 + (size + 1) * slot) / GIB
        tokens = int(rest * GIB) // (16 * 4 * 512 * 2)
        assert f"Mamba Cache is allocated. max_mamba_cache_size: {size}," in text
        one_side = (tokens + 1) * 16 * 4 * 256 * 2
        assert oom[0].startswith(f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {one_side / GIB:.2f} GiB. ")
    assert "memory_pool.py" in text.split("torch.OutOfMemoryError")[0].splitlines()[-2]
    # §4.4: launch-phase SIGQUIT handler; 0.5.13+ logs kill_process_tree
    after = msgs[msgs.index(crash[0]) + 1:]
    assert after[0] == "Received sigquit from a child process. It usually means the child failed."
    if version == "0.5.23":
        assert re.fullmatch(r"kill_process_tree called: parent_pid=(\d+), include_parent=True, pid=\1", after[1])
    truth = run.truth()
    assert truth["outcome"] == "oom" and truth["exit_code"] == 137
    assert run.gpu()["gpus"][0]["processes"] == []  # the killed server holds nothing


# ------------------------------------------------------------------ outcome: validation


def _normalise_site(text: str) -> str:
    return re.sub(r'File "[^"]*/site-packages/', 'File "{SITE}/', text)


def test_no_buffer_with_eagle_and_radix_cache_is_refused_by_0_5_11(sim_process, free_port):
    run = sim_process("0.5.11", demo.no_buffer_argv("0.5.11", port=free_port))
    assert run.wait() == 1
    text = _normalise_site(run.text())
    real = (DATA / "real-0.5.11-no_buffer-eagle.txt").read_text()
    assert text.endswith(real)
    assert "no_buffer.To use radix cache" in real.splitlines()[-1]


def test_no_buffer_on_0_5_23_needs_disable_overlap_schedule(sim_process, free_port):
    run = sim_process("0.5.23", demo.no_buffer_argv("0.5.23", port=free_port))
    assert run.wait() == 1
    text = _normalise_site(run.text())
    assert text.endswith((DATA / "real-0.5.23-no_buffer-overlap.txt").read_text())
    # SGLang 0.5.23 runs kill_process_tree(include_parent=False) in launch_server's finally
    assert re.search(r"kill_process_tree called: parent_pid=(\d+), include_parent=False, pid=\1\n", text)


def test_no_buffer_with_disable_overlap_schedule_starts_on_0_5_23(sim_process, free_port):
    run = sim_process("0.5.23", demo.no_buffer_argv("0.5.23", port=free_port) + ["--disable-overlap-schedule"])
    run.wait_for("The server is fired up and ready to roll!")
    assert run.truth()["resolved"]["mamba_radix_cache_strategy"] == "no_buffer"


def test_removed_flag_is_an_argparse_error_on_0_5_23(sim_process, free_port):
    argv = demo.base_argv("0.5.23", port=free_port) + ["--mamba-scheduler-strategy", "extra_buffer"]
    run = sim_process("0.5.23", argv)
    assert run.wait() == 2
    assert run.lines()[-1] + "\n" == (DATA / "real-0.5.23-old-strategy-flag.txt").read_text()
    assert run.text().count("usage: sglang serve [-h] --model-path MODEL_PATH") == 1


def test_unknown_flag_prints_sglangs_usage_and_error(sim_process):
    run = sim_process("0.5.11", ["--model-path", "/tmp/sgl/q36", "--bogus-flag", "3"])
    assert run.wait() == 2
    real = (DATA / "real-0.5.11-unknown-flag.txt").read_text()
    got = run.text()[run.text().index("usage: sglang serve"):]
    # {a,b,c} of a set-valued choices list comes out in hash order in real SGLang; compare the rest
    strip = re.compile(r"\[--sampling-backend \{[^}]*\}\]")
    assert strip.sub("", got) == strip.sub("", real)


# ------------------------------------------------------------------ outcome: ready


@pytest.mark.parametrize("version", VERSIONS)
def test_capped_extra_buffer_reaches_ready_and_serves(sim_process, free_port, version):
    run = sim_process(version, demo.working_argv(version, port=free_port))
    run.wait_for("The server is fired up and ready to roll!")
    run.wait_for("Decode batch, ")
    time.sleep(0.3)
    msgs = messages(run.text())
    # every startup line has the version's literal format
    for fmt in FORMATS[version] + COMMON:
        rx = fmt_regex(fmt.replace("backend={s} ", "backend={s}, "))
        assert any(rx.match(m) for m in msgs), f"no line of format {fmt!r}"
    mamba = next(m for m in msgs if m.startswith("Mamba Cache is allocated."))
    # 24 slots + padding slot + 2 ping-pong slots per cache slot (overlap on); the intermediate
    # caches hold (max_running_requests + 1) x 4 draft tokens rows, the request count after
    # the Mamba cap (24 // 5 = 4): SGLang passes mamba_spec_state_size=max_num_reqs
    # (0.5.11 model_runner_kv_cache_mixin.py:253, 0.5.23 kv_cache_configurator.py:1721)
    slots = 24 + 1 + 2 * 24
    spec_rows = (24 // 5 + 1) * 4
    assert mamba == (
        f"Mamba Cache is allocated. max_mamba_cache_size: 24, "
        f"conv_state size: {slots * LINEAR_LAYERS * CONV_PER_LAYER / GIB:.2f}GB, "
        f"ssm_state size: {slots * LINEAR_LAYERS * SSM_PER_LAYER / GIB:.2f}GB "
        f"intermediate_ssm_state_cache size: {spec_rows * LINEAR_LAYERS * SSM_PER_LAYER / GIB:.2f}GB "
        f"intermediate_conv_window_cache size: {spec_rows * LINEAR_LAYERS * CONV_PER_LAYER / GIB:.2f}GB "
    )
    # KV tokens: what --mem-fraction-static 0.9 leaves after weights, spec reserve and 24 slots
    pre = 96 * GIB - int(0.55 * GIB)
    if version == "0.5.11":
        rest = pre - int(51.20 * GIB) - pre * (1 - 0.9) - int(16 * 4 * SLOT) - 24 * SLOT
    else:
        # 0.5.23 reserves (min(16, 24 // 5) + 1) x 4 intermediate rows and charges the padding slot
        rest = pre - int(51.20 * GIB) - pre * (1 - 0.9) - (24 // 5 + 1) * 4 * SLOT - (24 + 1) * SLOT
    tokens = int(rest // KV_PER_TOKEN)
    summary = next(m for m in msgs if m.startswith("max_total_num_tokens="))
    assert summary.startswith(f"max_total_num_tokens={tokens}, chunked_prefill_size=8192, max_prefill_tokens=16384, "
                              f"max_running_requests={24 // 5}, context_len=262144, ")
    decodes = [m for m in msgs if m.startswith("Decode batch")]
    assert decodes and all(DECODE.match(m) for m in decodes)
    assert all(PREFILL.match(m) for m in msgs if m.startswith("Prefill batch"))
    for m in decodes:
        acc = float(re.search(r"accept len: ([\d.]+)", m).group(1))
        rate = float(re.search(r"accept rate: ([\d.]+)", m).group(1))
        assert 1.0 <= acc <= 4.0
        assert abs(rate - (acc - 1) / 3) <= 0.006  # 0.5.11+: drafts only, 3 drafts per step

    base = f"http://127.0.0.1:{free_port}"
    with httpx.Client(timeout=5) as client:
        assert client.get(f"{base}/health").status_code == 200
        info = client.get(f"{base}/server_info").json()
        assert info["status"] == "ready" and info["version"] == version
        assert info["max_total_num_tokens"] == tokens
        strategy = "mamba_scheduler_strategy" if version == "0.5.11" else "mamba_radix_cache_strategy"
        assert info[strategy] == "extra_buffer" and info["max_mamba_cache_size"] == 24
        state = info["internal_states"][0]
        assert state["memory_usage"]["token_capacity"] == tokens
        assert isinstance(state["memory_usage"]["graph"], float if version == "0.5.11" else dict)
        assert state["effective_max_running_requests_per_dp"] == 24 // 5
        if version == "0.5.23":
            assert info["frontend"] == "python" and "launch_command" in info
        before = run.text().count("Endpoint '/get_server_info' is deprecated")
        assert client.get(f"{base}/get_server_info").json()["status"] == "ready"
        metrics = client.get(f"{base}/metrics")
        assert metrics.status_code == 200
        assert client.get(f"{base}/no_such_endpoint").status_code == 404
    names = {s.name for fam in text_string_to_metric_families(metrics.text) for s in fam.samples}
    for name in ("sglang:num_running_reqs", "sglang:token_usage", "sglang:mamba_usage", "sglang:spec_accept_length",
                 "sglang:spec_accept_rate", "sglang:max_total_num_tokens", "sglang:gen_throughput",
                 "sglang:kv_used_tokens", "sglang:full_token_usage", "sglang:generation_tokens_total"):
        assert name in names, name
    if version == "0.5.23":
        assert {"sglang:mamba_used_tokens", "sglang:spec_num_draft_tokens", "sglang:weight_memory_usage_gb"} <= names
    else:
        assert "sglang:mamba_used_tokens" not in names and "sglang:engine_startup_time" in names
    time.sleep(0.2)
    text = run.text()
    assert text.count("Endpoint '/get_server_info' is deprecated and will be removed in a future version. "
                      "Please use '/server_info' instead.") == before + 1
    access = run.out.read_text()
    assert re.search(r'^INFO:     127\.0\.0\.1:\d+ - "GET /health HTTP/1\.1" 200 OK$', access, re.M)

    # GPU readings: weights + pools + graphs held by the server process
    gpu = run.gpu()
    assert gpu["simulated"] is True
    g = gpu["gpus"][0]
    assert g["name"] == "RTX PRO 6000 Blackwell" and g["memory_total_mib"] == 96 * 1024
    (proc,) = g["processes"]
    assert proc["pid"] == run.proc.pid and "mambaconsole.sim" in proc["cmdline"]
    assert g["memory_used_mib"] == proc["used_mib"]
    # context + weights + Mamba rows (73 state, spec_rows intermediate) + K and V + graphs (0.9 + 0.4 GiB)
    used = (int(0.55 * GIB) + int(51.20 * GIB) + (slots + spec_rows) * SLOT + 2 * (tokens + 1) * (KV_PER_TOKEN // 2)
            + int(0.9 * GIB) + int(0.4 * GIB))
    assert abs(proc["used_mib"] - used / (1 << 20)) <= 1
    assert 0 <= g["utilization_pct"] <= 100

    assert run.stop() == -signal.SIGTERM
    assert run.gpu()["gpus"][0]["processes"] == []
    truth = run.truth()
    printed = [float(re.search(r"accept len: ([\d.]+)", m).group(1)) for m in messages(run.text()) if m.startswith("Decode")]
    assert truth["accept_lens"] == printed


def test_lower_mem_fraction_also_reaches_ready(sim_process, free_port):
    argv = demo.first_failing_argv("0.5.11", port=free_port) + ["--mem-fraction-static", "0.80"]
    run = sim_process("0.5.11", argv)
    run.wait_for("The server is fired up and ready to roll!")


def test_metrics_are_404_without_enable_metrics(sim_process, free_port):
    argv = [a for a in demo.working_argv("0.5.11", port=free_port) if a != "--enable-metrics"]
    run = sim_process("0.5.11", argv)
    run.wait_for("The server is fired up and ready to roll!")
    r = httpx.get(f"http://127.0.0.1:{free_port}/metrics", timeout=5)
    assert r.status_code == 404 and r.json() == {"detail": "Not Found"}


def test_server_args_dump_is_a_dataclass_repr_on_0_5_11(sim_process, free_port):
    run = sim_process("0.5.11", demo.working_argv("0.5.11", port=free_port))
    run.wait_for("Init torch distributed begin.")
    dump = next(m for m in messages(run.text()) if m.startswith("server_args="))
    assert dump.startswith("server_args=ServerArgs(model_path='Qwen/Qwen3.6-27B', tokenizer_path='Qwen/Qwen3.6-27B', "
                           "tokenizer_mode='auto', ")
    assert "mamba_scheduler_strategy='extra_buffer', mamba_track_interval=256" in dump


def test_server_args_dump_is_a_dict_on_0_5_23(sim_process, free_port):
    run = sim_process("0.5.23", demo.working_argv("0.5.23", port=free_port))
    run.wait_for("Init parallel begin.")
    dump = next(m for m in messages(run.text()) if m.startswith("server_args="))
    assert dump.startswith("server_args={'model_path': 'Qwen/Qwen3.6-27B', 'tokenizer_path': 'Qwen/Qwen3.6-27B', "
                           "'tokenizer_mode': 'auto', ")
    assert "'mamba_radix_cache_strategy': 'extra_buffer'" in dump


def test_gpu_file_is_replaced_atomically(tmp_path):
    from mambaconsole.sim.gpu import gpu_state, write_atomic
    from mambaconsole.sim.model import SimGPU

    path = tmp_path / "gpu.json"
    gpu = SimGPU.parse("RTX PRO 6000 Blackwell,96")
    write_atomic(path, gpu_state(gpu, used_bytes=3 << 30, utilization_pct=40, pid=7, cmdline="x"))
    assert json.loads(path.read_text())["gpus"][0]["processes"] == [{"pid": 7, "used_mib": 3072, "cmdline": "x"}]
    assert [p.name for p in tmp_path.iterdir()] == ["gpu.json"]  # no temporary file left


def test_demo_home_is_under_the_user_cache_dir():
    import platformdirs

    home = demo.demo_home()
    assert home.parent == Path(platformdirs.user_cache_dir("mambaconsole"))
    env = demo.demo_env(home)
    assert env["MAMBACONSOLE_HOME"] == str(home)
    assert env["MAMBACONSOLE_SIM_GPU_FILE"] == env["MAMBACONSOLE_SIM_GPU"] == str(home / "sim-gpu.json")
    cmd = demo.sim_command(demo.first_failing_argv("0.5.23"), version="0.5.23")
    assert cmd[1:5] == ["-m", "mambaconsole.sim", "--sim-version", "0.5.23"]
    assert cmd[-2:] == ["--mamba-radix-cache-strategy", "extra_buffer"]


def test_0_5_23_warns_when_the_mamba_cache_caps_concurrency(sim_process, free_port):
    run = sim_process("0.5.23", demo.working_argv("0.5.23", port=free_port))
    run.wait_for("The server is fired up and ready to roll!")
    msgs = messages(run.text())
    # reference §4.2 (0.5.18+); the sentence after "To raise it:" from 0.5.23
    # srt/mem_cache/kv_cache_configurator.py:KVCacheConfigurator.resolve_max_num_reqs
    want = ("max_running_requests is capped to 4 by the mamba state cache (max_mamba_cache_size=24, 5 state slots "
            "per request). To raise it: increase --mamba-full-memory-ratio or --max-mamba-cache-size, or halve the "
            "state size with --mamba-ssm-dtype bfloat16.")
    assert want in msgs
    assert msgs.index(want) < next(i for i, m in enumerate(msgs) if m.startswith("Mamba Cache is allocated."))


def test_0_5_23_mamba_cache_too_small_for_one_request(sim_process, free_port):
    run = sim_process("0.5.23", demo.first_failing_argv("0.5.23", port=free_port) + ["--max-mamba-cache-size", "4"])
    assert run.wait() == -signal.SIGKILL
    last = [line for line in run.lines() if line.startswith("RuntimeError: ")]
    assert last == ["RuntimeError: Hybrid (mamba/linear-attention) state cache is too small to serve any requests. "
                    "max_mamba_cache_size=4, mamba_ratio=5, resulting max_num_reqs=0. Try: (1) reduce "
                    "--max-running-requests, (2) increase --mem-fraction-static, or (3) use GPUs with more memory."]
    assert run.truth()["outcome"] == "mamba_too_small"


@pytest.mark.parametrize("version", VERSIONS)
def test_extra_buffer_on_a_cpu_device_is_refused_like_sglang(sim_process, free_port, version):
    # the simulated node is a CUDA GPU; with an explicit --device cpu SGLang refuses extra_buffer
    run = sim_process(version, demo.first_failing_argv(version, port=free_port) + ["--device", "cpu"])
    assert run.wait() == 1
    assert _normalise_site(run.text()).endswith((DATA / f"real-{version}-extra_buffer-cpu.txt").read_text())


# The main thread holds the stop event's lock inside Event.wait (CPython's threading.Event
# takes its Condition's plain Lock around the wait) when the signal arrives: Python runs the
# handler right there, between two bytecodes. A handler that took that lock would wait for good.
_SIGNAL_IN_WAIT = """
import os, signal, sys, threading
from mambaconsole.sim.server import SimServer

server = SimServer.__new__(SimServer)  # only the stop event and the signal handlers
server._stop, server._signal_pipe = threading.Event(), None
old = server._install_signals()
with server._stop._cond:
    os.kill(os.getpid(), signal.SIGINT)
    sum(range(100_000))  # bytecodes: the handler runs while the lock is held
print("stop event set:", server._stop.wait(5), "signal:", signal.Signals(server._signal).name, flush=True)
server._restore_signals(old)
print("SIGINT handler back:", signal.getsignal(signal.SIGINT) is signal.default_int_handler)
"""


def test_sigint_while_the_sim_waits_on_its_stop_event_stops_it():
    import subprocess
    import sys

    try:
        done = subprocess.run([sys.executable, "-c", _SIGNAL_IN_WAIT], capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        pytest.fail("the SIGINT handler waited for the stop event's lock: the sim would ignore a stop")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["stop event set: True signal: SIGINT", "SIGINT handler back: True"]
