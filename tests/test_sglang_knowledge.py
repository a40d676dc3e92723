"""Launch-command model, speculative semantics, /metrics, server info and GPU tables."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from mambaconsole.errors import ConsoleError
from mambaconsole.sglang import events as ev
from mambaconsole.sglang.argv import LaunchCommand, ParserSpec, flag_field, renamed_flag
from mambaconsole.sglang.gpu import parse_gpu_table, parse_gpustat, parse_nvidia_smi_csv, parse_nvidia_smi_table
from mambaconsole.sglang.metrics import MetricsSnapshot, parse_metrics
from mambaconsole.sglang.server_info import endpoints_for, parse_server_info
from mambaconsole.sglang.spec import (DRAFTS_ONLY, UNKNOWN, WITH_BONUS, accept_rate_meaning, drafts_only_rate,
                                      format_accept, spec_stats, with_bonus_rate)

from fixtures.sglang_cases import CASES

SPECS = Path(__file__).resolve().parents[1] / "tui" / "mambaconsole" / "sim" / "specs"


# ------------------------------------------------------------------ launch command (case-13)

def case13() -> LaunchCommand:
    return LaunchCommand.parse((CASES / "case-13" / "cmd.txt").read_text())


def test_case13_env_aliases_equals_style():
    c = case13()
    assert [k for k, _ in c.env] == ["MOONCAKE_GLOBAL_SEGMENT_SIZE", "MOONCAKE_MASTER", "MOONCAKE_TE_META_DATA_SERVER"]
    assert c.program == ("python3", "-m", "sglang.launch_server")
    want = {"model_path": "/models/Qwen3.5-397B-A17B-FP8", "tp_size": "8", "mem_fraction_static": "0.8",
            "mamba_full_memory_ratio": "0.3", "mamba_radix_cache_strategy": "extra_buffer", "page_size": "64",
            "attention_backend": "fa3", "kv_cache_dtype": "fp8_e4m3", "speculative_algorithm": "EAGLE",
            "speculative_num_steps": "3", "speculative_eagle_topk": "1", "speculative_num_draft_tokens": "4",
            "enable_hierarchical_cache": True, "hicache_storage_backend": "mooncake", "port": "8000"}
    for k, v in want.items():
        assert c.get(k) == v, k
    assert c.get("--mamba-scheduler-strategy") == c.get("--mamba-radix-cache-strategy") == "extra_buffer"
    assert c.get("model_loader_extra_config") == '{"enable_multithread_load":"true","num_threads":64}'


def test_case13_edit_rewrites_the_token_and_round_trips():
    c = case13()
    n = len(c.args)
    e = c.set("mamba_radix_cache_strategy", "no_buffer")
    assert len(e.args) == n                       # rewritten, not appended
    assert [a.flag for a in e.args if "mamba" in a.flag and "strategy" in a.flag] == ["--mamba-scheduler-strategy"]
    spec = ParserSpec.from_json((SPECS / "sglang-0.5.23.json").read_text())
    e2 = c.set("mamba_radix_cache_strategy", "no_buffer", spec)   # old name unknown there: renamed
    assert [a.flag for a in e2.args if "strategy" in (a.flag or "")] == ["--mamba-radix-cache-strategy"]
    back = LaunchCommand.parse(e2.render())
    assert back.env == c.env and back.get("mamba_radix_cache_strategy") == "no_buffer"
    assert json.loads(back.get("model_loader_extra_config")) == {"enable_multithread_load": "true", "num_threads": 64}
    multi = LaunchCommand.parse(e2.render(multiline=True))
    assert multi == back
    # every value reaches the shell as one literal word
    hostile = c.set("served_model_name", "x; rm -rf / $(id) 'q'").set_env("PROXY", "a b$c")
    again = LaunchCommand.parse(hostile.render())
    assert again.get("served_model_name") == "x; rm -rf / $(id) 'q'" and again.env_dict["PROXY"] == "a b$c"


def test_renamed_and_unknown_flags_per_version():
    c = case13()
    assert c.check(version="0.5.13") == []
    # 0.5.14's parser also marks --enable-flashinfer-allreduce-fusion deprecated (its help names
    # --flashinfer-allreduce-fusion-backend; sglang.flag_table, read off that parser)
    ps = {p.flag: p for p in c.check(version="0.5.14")}
    assert set(ps) == {"--mamba-scheduler-strategy", "--enable-flashinfer-allreduce-fusion"}
    p = ps["--mamba-scheduler-strategy"]
    assert (p.kind, p.flag, p.suggestion) == ("renamed", "--mamba-scheduler-strategy", "--mamba-radix-cache-strategy")
    assert "deprecated" in p.message
    assert ps["--enable-flashinfer-allreduce-fusion"].suggestion == "--flashinfer-allreduce-fusion-backend"
    p = {p.flag: p for p in c.check(version="0.5.20")}["--mamba-scheduler-strategy"]
    assert p.kind == "renamed" and "not accepted" in p.message
    assert renamed_flag("--mamba-scheduler-strategy", "0.5.18") == ("--mamba-radix-cache-strategy", "deprecated")
    assert renamed_flag("--mamba-scheduler-strategy", "0.5.12") == ("--mamba-radix-cache-strategy", "old")
    spec23 = ParserSpec.from_json((SPECS / "sglang-0.5.23.json").read_text())
    ps = {p.flag: p for p in c.check(spec23)}
    assert set(ps) == {"--mamba-scheduler-strategy", "--enable-flashinfer-allreduce-fusion"}
    p = ps["--mamba-scheduler-strategy"]
    assert (p.kind, p.suggestion) == ("renamed", "--mamba-radix-cache-strategy")
    bad = LaunchCommand.parse("sglang serve --model-path m --mamba-radix-cache-strategy fancy --tp-size two --no-such-flag 1 --m x")
    kinds = {(p.kind, p.flag) for p in bad.check(spec23)}
    assert ("bad_choice", "--mamba-radix-cache-strategy") in kinds
    assert ("bad_type", "--tp-size") in kinds
    assert ("unknown", "--no-such-flag") in kinds
    assert ("ambiguous", "--m") in kinds
    spec11 = ParserSpec.from_json((SPECS / "sglang-0.5.11.json").read_text())
    assert LaunchCommand.parse("python -m sglang.launch_server --model m --tp 2 --mamba-scheduler-strategy no_buffer").check(spec11) == []
    assert flag_field("--tp=8") == "tp_size" and flag_field("--model") == "model_path"


def test_other_command_shapes():
    d = LaunchCommand.parse((CASES / "case-19" / "cmd.txt").read_text())
    assert d.program[0] == "docker" and d.program[-1] == "sglang.launch_server"
    assert d.fields() == {"model_path": "qwen3-next-80b", "host": "0.0.0.0", "trust_remote_code": True,
                          "port": "30000", "torchao_config": "int8dq", "disable_cuda_graph": True}
    c28 = LaunchCommand.parse((CASES / "case-28" / "cmd.txt").read_text())
    assert (c28.get("mem_fraction_static"), c28.get("max_total_tokens"), c28.get("context_length"),
            c28.get("chunked_prefill_size"), c28.get("max_prefill_tokens"), c28.get("enable_multimodal")) == (
        "0.8", "580000", "32768", "16384", "262144", True)
    c31 = LaunchCommand.parse((CASES / "case-31" / "cmd.txt").read_text())
    assert c31.get("model_path") == "mistralai/Mistral-7B-Instruct-v0.1" and c31.get("port") == "30000"
    # case-16: settings from a deployment script's dict
    m = LaunchCommand.from_mapping({"speculative-draft-model-revision": "42d3b34d588423cdae7ba8f53a8cf7789346a719",
                                    "mamba-scheduler-strategy": "extra_buffer", "speculative-num-draft-tokens": 16})
    assert m.get("mamba_radix_cache_strategy") == "extra_buffer" and m.get("speculative_num_draft_tokens") == "16"
    with pytest.raises(ConsoleError):
        LaunchCommand.parse("python -m sglang.launch_server --model 'unterminated")
    assert LaunchCommand.parse("sglang serve --model-path m").program == ("sglang", "serve")


def test_other_launcher_by_field_and_dashed_values():
    """What the console's argv diff and editor need: ``python -m <other module>`` as the
    program, the item (flag as written) per field, values starting with ``-`` kept one item."""
    sim = LaunchCommand.parse(["py", "-u", "-m", "mambaconsole.sim", "--sim-version", "0.5.11", "--tp", "2",
                               "--model-path", "m", "--tp-size", "4", "--disable-radix-cache"])
    assert sim.program == ("py", "-u", "-m", "mambaconsole.sim")
    by = sim.by_field()
    assert list(by) == ["sim_version", "tp_size", "model_path", "disable_radix_cache"]
    assert (by["tp_size"].flag, by["tp_size"].value) == ("--tp-size", "4")   # the last one wins, as argparse
    assert by["disable_radix_cache"].value is None
    assert sim.fields()["tp_size"] == "4" and sim.fields()["disable_radix_cache"] is True
    # argparse reads "--x -y" as two options: a dashed value is written --x=-y, a negative number is not
    edited = sim.set("served_model_name", "-weird").set("--model-path", "--also-weird").set("sim_seed", "-3")
    assert edited.argv()[-2:] == ["--sim-seed", "-3"]
    assert "--served-model-name=-weird" in edited.argv() and "--model-path=--also-weird" in edited.argv()
    back = LaunchCommand.parse(edited.argv())
    assert (back.get("served_model_name"), back.get("model_path"), back.get("sim_seed")) == ("-weird", "--also-weird", "-3")


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.from_regex(r"[a-z][a-z0-9-]{0,12}", fullmatch=True),
                       st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1, max_size=30),
                       max_size=6),
       st.dictionaries(st.from_regex(r"[A-Z_][A-Z0-9_]{0,8}", fullmatch=True),
                       st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=20),
                       max_size=3))
def test_render_parse_round_trip(options, env):
    c = LaunchCommand(env=tuple(env.items()), program=("sglang", "serve"),
                      args=tuple(ev_arg for ev_arg in LaunchCommand.from_mapping(options).args))
    back = LaunchCommand.parse(c.render())
    assert back.env == c.env
    assert shlex.split(c.render())[len(env):] == c.argv()


def test_line_continuations_are_removed_only_outside_single_quotes():
    """POSIX: backslash-newline is a line continuation outside single quotes (dropped, in
    double quotes too), literal inside them (hypothesis found env A='\\<newline>' read back as ' ')."""
    c = LaunchCommand(env=(("A", "\\\n"),), program=("sglang", "serve"))
    assert LaunchCommand.parse(c.render()).env == (("A", "\\\n"),)
    text = "B=1 python3 -m sglang.launch_server \\\n  --tp 2 \\\r\n  --note \"x \\\ny\" --v 'p\\\nq'"
    assert shlex.split(text.replace("\\\r\n", "\\\n"))  # the shell's reading, for the record
    back = LaunchCommand.parse(text)
    assert back.env == (("B", "1"),)
    assert back.argv()[3:] == ["--tp", "2", "--note", "x y", "--v", "p\\\nq"]


# ------------------------------------------------------------------ speculative decoding

def test_accept_rate_meaning_changed_in_0_5_11():
    assert accept_rate_meaning("0.5.10.post1") == WITH_BONUS and accept_rate_meaning("0.5.5") == WITH_BONUS
    assert accept_rate_meaning("0.5.11") == DRAFTS_ONLY and accept_rate_meaning("v0.5.23") == DRAFTS_ONLY
    assert accept_rate_meaning(None) == UNKNOWN and accept_rate_meaning("main") == UNKNOWN
    # reference worked example: 4 draft tokens, accept len 2.80 → 0.70 (≤0.5.10), 0.60 (0.5.11+)
    assert with_bonus_rate(2.80, 4) == pytest.approx(0.70)
    assert drafts_only_rate(2.80, 4) == pytest.approx(0.60)
    assert drafts_only_rate(None, 4) is None and drafts_only_rate(2.0, 1) is None


def _decode(accept: float | None) -> ev.DecodeBatch:
    spec = f"accept len: {accept:.2f}, accept rate: 0.00, " if accept is not None else ""
    return ev.parse_line(f"[2026-10-01 12:00:00 TP0] Decode batch, #running-req: 1, #token: 1, token usage: 0.00, "
                         f"{spec}cuda graph: True, gen throughput (token/s): 1.00, #queue-req: 0")


def test_spec_stats_off_collapse_and_unknown():
    off = spec_stats([_decode(None)] * 3)
    assert off.enabled is False and off.batches == 0 and format_accept(off.last_accept_len, off.enabled) == "off"
    assert spec_stats([]).enabled is None and format_accept(None, None) == "n/a"
    healthy = spec_stats([_decode(x) for x in (2.5, 1.0, 3.1)], version="0.5.11")
    assert healthy.enabled and healthy.batches == 3 and not healthy.collapsed
    assert healthy.mean_accept_len == pytest.approx(2.2) and healthy.rate_meaning == DRAFTS_ONLY
    collapsed = spec_stats([_decode(x) for x in (2.5, 1.0, 1.0, 1.0)])
    assert collapsed.collapsed and format_accept(1.0, True) == "1.00"


# ------------------------------------------------------------------ /metrics

METRICS_0_5_23 = """# HELP sglang:num_running_reqs The number of running requests.
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{engine_type="unified",model_name="q",moe_ep_rank="0",pp_rank="0",tp_rank="0"} 8.0
sglang:num_running_reqs{engine_type="unified",model_name="q",moe_ep_rank="0",pp_rank="0",tp_rank="1"} 7.0
# TYPE sglang:mamba_usage gauge
sglang:mamba_usage{engine_type="unified",model_name="q",moe_ep_rank="0",pp_rank="0",tp_rank="0"} 0.8
# TYPE sglang:mamba_used_tokens gauge
sglang:mamba_used_tokens{engine_type="unified",model_name="q",moe_ep_rank="0",pp_rank="0",tp_rank="0"} 32.0
# TYPE sglang:mamba_available_tokens gauge
sglang:mamba_available_tokens{engine_type="unified",model_name="q",moe_ep_rank="0",pp_rank="0",tp_rank="0"} 8.0
# TYPE sglang:spec_accept_length gauge
sglang:spec_accept_length{engine_type="unified",model_name="q",moe_ep_rank="0",pp_rank="0",tp_rank="0"} 2.8
# TYPE sglang:spec_accept_rate gauge
sglang:spec_accept_rate{engine_type="unified",model_name="q",moe_ep_rank="0",pp_rank="0",tp_rank="0"} NaN
# TYPE sglang:cache_hit_rate gauge
sglang:cache_hit_rate{engine_type="unified",model_name="q",moe_ep_rank="0",pp_rank="0",tp_rank="0"} 0.25
# TYPE sglang:graph_memory_usage_gb gauge
sglang:graph_memory_usage_gb{engine_type="unified",model_name="q",phase="decode",tp_rank="0"} 1.2
sglang:graph_memory_usage_gb{engine_type="unified",model_name="q",phase="target_verify",tp_rank="0"} 0.3
# TYPE sglang:weight_memory_usage_gb gauge
sglang:weight_memory_usage_gb{engine_type="unified",model_name="q",tp_rank="0"} 40.18
# HELP sglang:num_requests_total Number of requests.
# TYPE sglang:num_requests_total counter
sglang:num_requests_total{model_name="q"} 12.0
"""


def test_metrics_snapshot_rank0_nan_and_sums():
    m = parse_metrics(METRICS_0_5_23)
    assert m.num_running_reqs == 8.0 and m.mamba_usage == 0.8
    assert (m.mamba_used_tokens, m.mamba_available_tokens) == (32.0, 8.0)
    assert m.spec_accept_length == 2.8 and m.spec_accept_rate is None   # NaN → no data
    assert "sglang:spec_accept_rate" in m.nan
    assert m.graph_memory_usage_gb == pytest.approx(1.5) and m.weight_memory_usage_gb == 40.18
    assert m.cache_hit_rate == 0.25 and m.swa_token_usage is None and not m.has("sglang:swa_token_usage")
    assert "moe_ep_rank" in m.label_names
    assert m.value("sglang:num_requests_total") == 12.0
    off = MetricsSnapshot.disabled()
    assert not off.enabled and off.num_running_reqs is None


def test_metrics_with_garbage_never_raises():
    m = parse_metrics("curl x\n" + METRICS_0_5_23 + 'sglang:num_queue_reqs{tp_rank="0"')
    assert m.num_running_reqs == 8.0 and m.dropped_lines == 2


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=300))
def test_metrics_fuzz(text):
    parse_metrics(METRICS_0_5_23[:200] + text)


# ------------------------------------------------------------------ server info

def test_server_info_case26_and_old_graph_float():
    si = parse_server_info((CASES / "case-26" / "input.txt").read_text())
    assert si.version == "0.5.19" and si.status == "ready" and si.spec_enabled is False
    assert si.effective_args["served_model_name"] == "qwen3.8-27b" and si.effective_args["port"] == 8080
    assert {d[0] for d in si.disagreements} == {"disable_chunked_prefix_cache", "pp_max_micro_batch_size",
                                                "disaggregation_decode_retraction_backup"}
    assert si.memory.startup_available_gb == 1.913 and si.memory.token_capacity == 262144
    assert si.memory.graph_by_phase["decode"] == 0.111
    old = parse_server_info({"model_path": "m", "tp_size": 1, "speculative_algorithm": "EAGLE", "version": "0.5.9",
                             "internal_states": [{"memory_usage": {"weight": 1.5, "kvcache": 2.0, "graph": 0.25},
                                                  "avg_spec_accept_length": 2.75, "last_gen_throughput": 10.0}]})
    assert old.memory.graph_gb == 0.25 and old.memory.graph_by_phase is None
    assert old.spec_enabled is True and old.avg_spec_accept_length == 2.75
    assert endpoints_for("0.5.5") == ("/get_server_info",) and endpoints_for("0.5.20")[0] == "/server_info"
    with pytest.raises(ConsoleError):
        parse_server_info("{not json")


# ------------------------------------------------------------------ GPU tables

SMI_NEW = """+---------------------------------------------------------------------------------------+
| NVIDIA-SMI 535.104.05             Driver Version: 535.104.05   CUDA Version: 12.2     |
|-----------------------------------------+----------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |         Memory-Usage | GPU-Util  Compute M. |
|                                         |                      |               MIG M. |
|=========================================+======================+======================|
|   0  NVIDIA H100 80GB HBM3          On  | 00000000:18:00.0 Off |                    0 |
| N/A   32C    P0              69W / 700W |  60123MiB / 81559MiB |     87%      Default |
|                                         |                      |             Disabled |
+-----------------------------------------+----------------------+----------------------+
|   1  NVIDIA H100 80GB HBM3          On  | 00000000:2A:00.0 Off |                    0 |
| N/A   30C    P0              70W / 700W |      4MiB / 81559MiB |      0%      Default |
|                                         |                      |             Disabled |
+-----------------------------------------+----------------------+----------------------+

+---------------------------------------------------------------------------------------+
| Processes:                                                                            |
|  GPU   GI   CI        PID   Type   Process name                            GPU Memory |
|        ID   ID                                                             Usage      |
|=======================================================================================|
|    0   N/A  N/A   1234567      C   sglang::scheduler_TP0                     60110MiB |
+---------------------------------------------------------------------------------------+
"""

SMI_OLD = """+-----------------------------------------------------------------------------+
| NVIDIA-SMI 470.57.02    Driver Version: 470.57.02    CUDA Version: 11.4     |
|-------------------------------+----------------------+----------------------+
| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |
|===============================+======================+======================|
|   0  A100-SXM4-40GB      On   | 00000000:07:00.0 Off |                    0 |
| N/A   33C    P0    61W / 400W |  30001MiB / 40536MiB |     12%      Default |
+-------------------------------+----------------------+----------------------+
| Processes:                                                                  |
|  GPU   GI   CI        PID   Type   Process name                  GPU Memory |
|=============================================================================|
|    0   N/A  N/A     12345      C   python                          29990MiB |
+-----------------------------------------------------------------------------+
"""


def test_nvidia_smi_both_header_styles():
    new = parse_nvidia_smi_table(SMI_NEW)
    assert [(g.index, g.memory_used_mib, g.memory_total_mib, g.utilization_pct) for g in new] == [
        (0, 60123, 81559, 87), (1, 4, 81559, 0)]
    assert new[0].processes[0].pid == 1234567 and new[0].processes[0].name == "sglang::scheduler_TP0"
    assert new[0].processes[0].memory_mib == 60110 and new[1].processes == ()
    old = parse_gpu_table(SMI_OLD)
    assert [(g.index, g.name, g.memory_used_mib, g.utilization_pct, g.temperature_c) for g in old] == [
        (0, "A100-SXM4-40GB", 30001, 12, 33)]
    assert old[0].processes[0].pid == 12345


def test_csv_and_gpustat():
    rows = parse_nvidia_smi_csv("0, NVIDIA H200, 1000, 143771, 5\n1, NVIDIA H200, 2000, 143771, [N/A]\n")
    assert [(g.index, g.memory_used_mib, g.utilization_pct) for g in rows] == [(0, 1000, 5), (1, 2000, None)]
    hdr = parse_gpu_table("index, name, memory.used [MiB], memory.total [MiB], utilization.gpu [%]\n"
                          "0, NVIDIA A100, 66601 MiB, 81251 MiB, 3 %\n")
    assert (hdr[0].memory_used_mib, hdr[0].memory_total_mib, hdr[0].utilization_pct) == (66601, 81251, 3)
    gs = parse_gpustat((CASES / "case-28" / "input.txt").read_text())
    assert [p.memory_mib for p in gs[0].processes] == [2620, 2088, 57706, 2088, 2088]
    assert gs[0].memory_used_mib - gs[1].memory_used_mib == 8686
    assert sum(sorted(p.memory_mib for p in gs[0].processes)[:-1]) == 8884
    with pytest.raises(ConsoleError):
        parse_gpu_table("hello")
