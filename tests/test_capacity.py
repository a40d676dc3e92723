"""Mamba slot capacity (mambaconsole.sglang.capacity): the real-world cases 15 and 08 (inputs
read from tests/data/cases, expected values from their expected.md, recomputed here), SGLang's
own slots-per-request function run from the test venvs, and logs in SGLang's 0.5.x format."""

from __future__ import annotations

import json
import re
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fixtures.sglang_cases import CASES
from fixtures.sglang_venvs import sglang_env, sglang_python
from mambaconsole.sglang import events as E
from mambaconsole.sglang.capacity import (
    GB_BYTES, Sample, capacity, held_per_request, infer_slots_per_request, slots_per_request_rule, verdict,
)
from mambaconsole.sglang.summary import summarize


# --- case-15: requests hold 4 slots, the cap reserves 5 ------------------------------------------

def case15_rows() -> list[tuple[int, float, int]]:
    """(running, printed mamba usage, slots the reporter counted) per row of the input table."""
    rows = []
    for line in (CASES / "case-15" / "input.txt").read_text().splitlines():
        m = re.match(r"\s*(\d+) running:\s*([\d.]+)\s*=\s*(\d+)/40", line)
        if m:
            rows.append((int(m.group(1)), float(m.group(2)), int(m.group(3))))
    assert len(rows) == 5
    return rows


POOL15 = 40  # expected.md: --max-mamba-cache-size 40
CAP15 = 8  # expected.md: SGLang reports max_running_requests=8


def test_case15_held_per_request_each_line_and_together():
    rows = case15_rows()
    for running, usage, slots in rows:
        h = held_per_request([Sample(running=running, mamba_usage=usage)], POOL15)
        assert abs(h.per_request - slots / running) <= 0.01  # expected.md 1: 4.0 at every point, ±0.01
        assert abs(h.per_request - 4.0) <= 0.01
    # 0.59 × 40 = 23.6 is a printed (2-decimal) usage: slots are whole, the reporter counted 24 at
    # 6 running (a plain division would say 3.93 per request)
    running, usage, counted = next(r for r in rows if r[0] == 6)
    assert Sample(running=running, mamba_usage=usage).slots_in_use(POOL15) == (float(counted), 0.0)
    h = held_per_request([Sample(running=r, mamba_usage=u) for r, u, _ in rows], POOL15)
    assert abs(h.per_request - 4.0) <= 0.01 and h.lines == 5 and h.exact


def test_case15_reserved_idle_and_verdict():
    rows = case15_rows()
    samples = [Sample(running=r, mamba_usage=u) for r, u, _ in rows]
    # at 8 running requests queue; the report states the KV pool at 35 %
    samples.append(Sample(running=8, queue=3, mamba_usage=rows[-1][1], token_usage=0.35))
    c = capacity(pool_slots=POOL15, cap=CAP15, samples=samples)
    assert c.reserved == POOL15 // CAP15 == 5 and c.reserved_source == "inferred"  # expected.md 2: 40 / 8
    assert abs(c.idle_at_cap - (POOL15 - CAP15 * 4)) <= 0.1  # 8 slots idle
    assert abs(c.used_at_cap - 0.80) <= 0.01 and abs(c.idle_at_cap / POOL15 - 0.20) <= 0.01  # 20 %
    assert c.verdict == "admission cap"  # expected.md 3
    assert c.verdict not in ("mamba pool full", "KV pool full")
    # expected.md 4: held vs reserved side by side, the idle slots visible
    line = c.line()
    assert line == "held 4.0/req · reserved 5/req · cap 8: 8/40 idle", line
    # SGLang's own statement wins over the inference (same number here)
    c2 = capacity(pool_slots=POOL15, cap=CAP15, stated_slots_per_request=5, samples=samples)
    assert c2.reserved == 5 and c2.reserved_source == "sglang"


def test_verdict_pools_full_and_nothing_queued():
    full_kv = Sample(running=8, queue=3, mamba_usage=0.80, token_usage=0.95)
    assert verdict(full_kv, pool=40, cap=8, held=4.0, reserved=5)[0] == "KV pool full"
    full_mamba = Sample(running=6, queue=3, mamba_usage=0.95, token_usage=0.35)  # 38 of 40: 2 free < 4
    assert verdict(full_mamba, pool=40, cap=8, held=4.0, reserved=5)[0] == "mamba pool full"
    # below the cap with room: no limit applies
    assert verdict(Sample(running=4, queue=2, mamba_usage=0.40, token_usage=0.35),
                   pool=40, cap=8, held=4.0, reserved=5)[0] is None
    assert verdict(Sample(running=8, queue=0, mamba_usage=0.80, token_usage=0.35),
                   pool=40, cap=8, held=4.0, reserved=5) == (None, "nothing queues")
    # unknown pool size: usage threshold
    assert verdict(Sample(running=8, queue=1, mamba_usage=0.97), pool=None, cap=None, held=None,
                   reserved=None)[0] == "mamba pool full"


@settings(max_examples=200, deadline=None)
@given(pool=st.integers(4, 49), k=st.integers(1, 5), data=st.data())
def test_rounded_usage_gives_whole_slots_below_50(pool, k, data):
    """Any pool under 50 slots: any 2-decimal usage within 0.01 of the true fraction (the
    printed value, seen 0.01 off in case-15) still gives the exact held count (pool × 0.01 <
    0.5 slot)."""
    if pool // k < 1:
        return
    running = data.draw(st.integers(1, pool // k))
    true = running * k / pool
    usage = data.draw(st.sampled_from([u for u in (round(true, 2) + d for d in (-0.01, 0.0, 0.01))
                                       if abs(u - true) <= 0.01 + 1e-9]))
    h = held_per_request([Sample(running=running, mamba_usage=usage)], pool)
    assert h.per_request == k and h.exact


def test_large_pool_keeps_a_tolerance_and_mamba_num_is_exact():
    h = held_per_request([Sample(running=100, mamba_usage=0.40)], 1000)
    assert abs(h.per_request - 4.0) < 1e-9 and abs(h.tolerance - 0.01 * 1000 / 100) < 1e-9
    h = held_per_request([Sample(running=100, mamba_usage=0.40, mamba_num=397)], 1000)
    assert h.per_request == 3.97 and h.exact


# --- case-08: no_buffer, 60 slots, maxRunningRequests 32 ------------------------------------------

def case08_values() -> dict:
    t = (CASES / "case-08" / "input.txt").read_text()
    m = re.search(r"mamba cache \| ([\d.]+)G / (\d+) slots = ([\d.]+)MB", t)
    k = re.search(r"KV pool \| ([\d.]+)G = ([\d,]+) tokens", t)
    return {"mamba_gb": float(m.group(1)), "slots": int(m.group(2)), "per_slot_mb": float(m.group(3)),
            "kv_gb": float(k.group(1)), "kv_tokens": int(k.group(2).replace(",", "")),
            "requested": int(re.search(r"maxRunningRequests: (\d+)", t).group(1)),
            "peak_slots": int(re.search(r"peak slots used, 14d \| (\d+)", t).group(1)),
            "peak_running": int(re.search(r"peak concurrency, 14d \| (\d+)", t).group(1))}


def test_case08_concurrency_costs_and_what_if():
    v = case08_values()
    assert (v["slots"], v["requested"]) == (60, 32)
    c = capacity(pool_slots=v["slots"], cap=None, requested=v["requested"],
                 args={"mamba_scheduler_strategy": "no_buffer", "disable_radix_cache": False},
                 mamba_state_gb=v["mamba_gb"], kv_gb=v["kv_gb"], kv_tokens=v["kv_tokens"])
    assert c.reserved == 3 and c.reserved_source == "rule"  # expected.md 3: no_buffer, 3 per request
    assert c.cap == min(32, 60 // 3) == 20
    # expected.md 1: 4.46 GB / 60 = 74.3 "MB" (thousandths of SGLang's GB)
    assert round(c.per_slot_gb * 1000, 1) == v["per_slot_mb"] == 74.3
    # expected.md 2: 5.60 GB = 183,240 tokens: 30-33 KB per token (GB = 1024^3 bytes here)
    assert c.kv_bytes_per_token == pytest.approx(5.60 * 1024 ** 3 / 183240)
    assert 30_000 <= c.kv_bytes_per_token <= 33 * 1024
    w = c.what_if(48)  # expected.md 4
    assert w.concurrency == min(32, 48 // 3) == 16
    assert round(w.freed_gb * 1000) == round(12 * 4.46 / 60 * 1000) == 892
    assert round(w.extra_kv_tokens / 1000) == 29
    assert round(w.kv_growth, 2) == 0.16
    # expected.md 5: the observed peaks fit inside 48 slots
    assert w.concurrency >= v["peak_running"] and 48 >= v["peak_slots"]
    c2 = capacity(pool_slots=60, cap=None, requested=32, args={"mamba_scheduler_strategy": "no_buffer"},
                  samples=[Sample(running=v["peak_running"], mamba_num=v["peak_slots"])])
    assert c2.fit_to_peak() == 16 * 3 == 48


def test_inference_needs_a_unique_ratio():
    assert infer_slots_per_request(40, 8) == 5
    assert infer_slots_per_request(60, 20) == 3
    # case-06: 10 slots capped to 2 fits 4 and 5 per request: only SGLang's "5 state slots" tells
    assert infer_slots_per_request(10, 2) is None
    line = (CASES / "case-06" / "input.log").read_text()
    c = summarize(E.parse_text(line)).capacity()
    assert (c.pool_slots, c.cap, c.reserved, c.reserved_source) == (10, 2, 5, "sglang")
    assert infer_slots_per_request(9, 1) is None  # 5..9 all give 1
    # a cap above what the pool allows is not a Mamba cap: nothing is inferred then
    assert capacity(pool_slots=40, cap=4, requested=4).reserved is None


# --- SGLang's own rule, run from the test venvs ---------------------------------------------------

PROBE = r"""
import itertools, json, os, sys
from types import SimpleNamespace as NS
ver = sys.argv[1]
out = []
if ver == "0.5.11":
    from sglang.srt.model_executor.model_runner_kv_cache_mixin import ModelRunnerKVCacheMixin as M
    for strat, off, no_ov in itertools.product(["no_buffer", "extra_buffer"], [False, True], [False, True]):
        sa = NS(disable_radix_cache=off, disable_overlap_schedule=no_ov,
                enable_mamba_extra_buffer=lambda s=strat: s == "extra_buffer")
        out.append([strat, off, no_ov, False, M._calculate_mamba_ratio(NS(server_args=sa))])
else:
    import sglang.srt.mem_cache.kv_cache_configurator as K
    for strat, off, no_ov, skip in itertools.product(["no_buffer", "extra_buffer", "extra_buffer_lazy"],
                                                    [False, True], [False, True], [False, True]):
        if strat == "extra_buffer_lazy" and no_ov:
            continue  # SGLang asserts: lazy needs the overlap scheduler
        os.environ["SGLANG_OPT_MAMBA_SKIP_DECODE_LOCK"] = "1" if skip else "0"
        K.get_memory = lambda o=off: NS(disable_radix_cache=o)
        K.get_exec = lambda s=strat: NS(mamba=NS(enable_mamba_extra_buffer=s.startswith("extra"),
                                                 enable_mamba_extra_buffer_lazy=s == "extra_buffer_lazy"))
        K.get_schedule = lambda n=no_ov: NS(disable_overlap_schedule=n)
        out.append([strat, off, no_ov, skip, K.KVCacheConfigurator._calculate_mamba_ratio(None)])
print(json.dumps(out))
"""


@pytest.mark.sglang
@pytest.mark.parametrize("version", ["0.5.11", "0.5.23"])
def test_rule_matches_sglang_calculate_mamba_ratio(version):
    """slots_per_request_rule == SGLang's own _calculate_mamba_ratio (called, not copied) for
    every strategy × radix cache × overlap (× 0.5.23's skip-decode-lock env)."""
    py = sglang_python(version)
    p = subprocess.run([str(py), "-c", PROBE, version], env=sglang_env(), capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    table = json.loads(p.stdout.strip().splitlines()[-1])
    assert len(table) >= 8
    for strat, off, no_ov, skip, ratio in table:
        assert slots_per_request_rule(strat, disable_radix_cache=off, overlap=not no_ov,
                                      skip_decode_lock=skip) == ratio, (strat, off, no_ov, skip)


# --- from a log ---------------------------------------------------------------------------------

def _case15_log() -> str:
    """A 0.5.18+ log of case-15's run: the cap warning, the Mamba and KV pools, decode lines in
    the 0.5.18-0.5.23 layout (sglang-observables §2.5 D-E) with case-15's usage values."""
    t = "[2026-09-14 10:00:{:02d}{}] "
    lines = [
        t.format(0, " TP0") + "Mamba Cache is allocated. max_mamba_cache_size: 40, conv_state size: 0.10GB, "
                              "ssm_state size: 2.90GB intermediate_ssm_state_cache size: 0.50GB "
                              "intermediate_conv_window_cache size: 0.02GB ",
        t.format(0, " TP0") + "KV Cache is allocated. dtype: torch.bfloat16, #tokens: 100000, K size: 3.00 GB, "
                              "V size: 3.00 GB",
        t.format(1, " TP0") + "max_running_requests is capped to 8 by the mamba state cache (max_mamba_cache_size=40, "
                              "5 state slots per request). To raise it: increase --mamba-full-memory-ratio or "
                              "--max-mamba-cache-size, or halve the state size with --mamba-ssm-dtype bfloat16.",
    ]
    for i, (running, usage, _) in enumerate(case15_rows()):
        queue = 3 if running == 8 else 0
        lines.append(t.format(10 + i, " TP0") + f"Decode batch, #running-req: {running}, #full token: 35000, "
                     f"full token usage: 0.35, mamba usage: {usage:.2f}, accept len: 2.80, accept rate: 0.60, "
                     f"cuda graph: True, gen throughput (token/s): 812.05, #queue-req: {queue}")
    return "\n".join(lines) + "\n"


def test_log_summary_capacity_from_case15_log():
    c = summarize(E.parse_text(_case15_log())).capacity()
    assert (c.pool_slots, c.cap, c.reserved, c.reserved_source) == (40, 8, 5, "sglang")
    assert abs(c.held.per_request - 4.0) <= 0.01 and c.held.lines == 5
    assert c.verdict == "admission cap" and c.queue == 3 and c.running == 8
    assert c.per_slot_gb == pytest.approx((0.10 + 2.90) / 40)  # conv + ssm; intermediate left out
    assert c.kv_bytes_per_token == pytest.approx(6.00 * GB_BYTES / 100000)
    assert c.fit_to_peak() is None  # 8 × 5 = 40: no smaller pool admits the peak
    f = [x.message for x in summarize(E.parse_text(_case15_log())).findings if x.code == "queueing"]
    assert f == ["requests queue (3 waiting at 8 running): admission cap; 8 of 40 Mamba slots idle at the cap "
                 "(requests hold 4.0, the cap reserves 5 per request)"]


def test_case26_server_info_extra_buffer_lazy_reserves_4(capsys):
    """case-26 (/get_server_info, 0.5.19): extra_buffer_lazy, 8 slots; case-08's expected.md: 4 slots
    per request for extra_buffer_lazy, so 8 // 4 = 2 = the requested 2 (expected.md 5: no cap)."""
    from mambaconsole.cli import main

    assert main(["inspect", str(CASES / "case-26" / "input.txt"), "--json"]) == 0
    r = json.loads(capsys.readouterr().out)["capacity"]
    assert (r["pool_slots"], r["reserved_per_request"], r["reserved_source"]) == (8, 4, "rule")
    assert r["cap"] == r["requested"] == 8 // 4 == 2


def test_inspect_prints_capacity(tmp_path, capsys):
    from mambaconsole.cli import main

    p = tmp_path / "case15.log"
    p.write_text(_case15_log())
    assert main(["inspect", str(p)]) == 0
    out = capsys.readouterr().out
    assert "mamba slots: held 4.0/req · reserved 5/req · cap 8: 8/40 idle" in out
    assert "queueing: admission cap" in out
    assert main(["inspect", str(p), "--json", "--what-if-mamba-slots", "32"]) == 0
    r = json.loads(capsys.readouterr().out)["capacity"]
    assert r["reserved_per_request"] == 5 and r["reserved_source"] == "sglang"
    assert abs(r["held_per_request"] - 4.0) <= 0.01 and r["verdict"] == "admission cap"
    assert r["idle_at_cap"] == pytest.approx(40 - 8 * 4)
    w = r["what_if"]
    assert w["pool_slots"] == 32 and w["concurrency"] == 32 // 5
    assert w["freed_gb"] == pytest.approx(8 * 3.00 / 40)
    assert w["extra_kv_tokens"] == int(8 * 3.00 / 40 * GB_BYTES / (6.00 * GB_BYTES / 100000))


def test_console_state_and_pane_text_from_case15_log():
    """The console folds the log into the same picture: the speculative pane's load lines show
    held vs reserved slots and why requests queue (ConsoleState, the pane's own functions)."""
    from mambaconsole.state import ConsoleState, LogLine, LogLines, RunInfo, RunsListed
    from mambaconsole.ui.spec_pane import capacity_of, load_text

    st = ConsoleState("h")
    st.apply(RunsListed((RunInfo("r1", log_path="/x", state="running"),), "r1"))
    off, batch = 0, []
    for text in _case15_log().splitlines():
        batch.append(LogLine("r1", off, text))
        off += len(text.encode()) + 1
    st.apply(LogLines("r1", tuple(batch)))
    st.flush_log()
    c = capacity_of(st)
    assert (c.pool_slots, c.cap, c.reserved) == (40, 8, 5) and abs(c.held.per_request - 4.0) <= 0.01
    text = load_text(st, c, 54).splitlines()  # the pane's width at 120x40
    assert text[0] == "running 8  queued 3 (admission cap)"
    # a sentence, not "slots held 4.0/req · reserved 5/req · cap 8: 8/40 idle" (expected.md 1-4:
    # 4 held, 5 reserved, cap 8, 8 of the 40 slots idle), split at its ";" to fit
    assert text[2:] == ["Mamba slots per request: 4.0 held, 5 reserved;", "cap 8 requests: 8 of 40 slots idle"]
    assert all(len(t) <= 54 for t in text)
    wide = load_text(st, c, 100).splitlines()
    assert wide[2:] == ["Mamba slots per request: 4.0 held, 5 reserved; cap 8 requests: 8 of 40 slots idle"]
