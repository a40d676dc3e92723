"""The product on a real SGLang 0.5.23 hybrid server (Qwen3-Next: 3 linear-attention layers + 1
full attention, Mamba cache) on CPU, through its own paths (tests/fixtures/real_sglang.py,
``real_qnext``: ``mambaconsole launch`` over the loopback sshd, tmux, the node's real python, the
CPU kernel stand-ins of tests/sglang-venvs/server-stub-cpu on the run's PYTHONPATH). In order:

1. the hybrid serves a /generate on SGLang's CPU linear-attention path (the stand-ins were
   called) and logs decode lines with its Mamba use;
2. ``inspect`` of the real log: ready, the Mamba pool size and the last decode line's Mamba use,
   as the log's own lines say;
3. the console's relaunch loop on the hybrid: edit ``--max-mamba-cache-size`` 32 -> 16,
   pre-flight by the real resolver in the run's environment, relaunch; the new run's real log
   allocates 16 slots and the console reads 16.
Two server starts: about 4 minutes on a loaded 2-core machine.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from fixtures.console import console_for, wait_until
from fixtures.real_sglang import ALIAS
from mambaconsole.node import node_for

pytestmark = [pytest.mark.real_sglang, pytest.mark.sshd, pytest.mark.timeout(1200)]

#: SGLang 0.5.23's own lines, read here independently of the product's parsers
POOL_LINE = re.compile(r"Mamba Cache is allocated\. max_mamba_cache_size: (\d+),")
DECODE_LINE = re.compile(r"Decode batch, #running-req: (\d+), .*?mamba num: (\d+), mamba usage: ([\d.]+)")

#: the CPU linear-attention entry points SGLang 0.5.23 calls for a GDN layer (gdn_backend.py,
#: kernels/gdn_triton.py, models/qwen3_next.py): prefill and decode both
GDN_ENTRY_POINTS = {
    "torch.ops.sgl_kernel.fused_qkvzba_split_reshape_cat_cpu",
    "sgl_kernel.mamba.causal_conv1d_fn_cpu",
    "torch.ops.sgl_kernel.fused_gdn_gating_cpu",
    "sgl_kernel.mamba.chunk_gated_delta_rule_cpu",
    "sgl_kernel.mamba.causal_conv1d_update_cpu",
    "torch.ops.sgl_kernel.fused_sigmoid_gating_delta_rule_update_cpu",
}


def test_the_hybrid_serves_on_the_cpu_linear_attention_path(real_qnext):
    """A request of 48 new tokens (the default --decode-log-interval is 40) is served; the
    scheduler logs a decode line holding Mamba state; the GDN layers ran SGLang's CPU path."""
    _node, run = real_qnext
    out = run.generate("The quick brown fox", max_new_tokens=48)
    assert out["meta_info"]["completion_tokens"] == 48
    decodes = DECODE_LINE.findall(run.log_text())
    assert decodes, run.log_text()[-3000:]
    running, mamba_num, _usage = decodes[-1]
    assert int(running) >= 1 and int(mamba_num) >= 1
    calls = set(Path(run.env["MAMBACONSOLE_SGL_KERNEL_CALLS"]).read_text().split())
    assert GDN_ENTRY_POINTS <= calls, GDN_ENTRY_POINTS - calls


def test_inspect_reads_ready_and_the_mamba_pool(real_qnext):
    node, run = real_qnext
    if not DECODE_LINE.search(run.log_text()):  # run alone: make the decode line the test reads
        run.generate("Hello", max_new_tokens=48)
    log = run.log_text()
    (pool,) = POOL_LINE.findall(log)
    assert pool == "32"  # the argv's --max-mamba-cache-size, as SGLang allocated it
    running, mamba_num, usage = DECODE_LINE.findall(log)[-1]
    out = json.loads(node.cli("inspect", str(run.log_path), "--json").stdout)
    assert out["outcome"] == "ready", out["outcome"]
    assert out["failure"] is None
    assert out["mamba_slots"] == int(pool)
    assert out["capacity"]["pool_slots"] == int(pool)
    assert out["last_decode"]["running"] == int(running)
    assert out["last_decode"]["mamba_num"] == int(mamba_num)
    assert out["last_decode"]["mamba_usage"] == float(usage)


async def test_the_relaunch_loop_on_the_hybrid(real_qnext, monkeypatch):
    """Last (it replaces the fixture's run): --max-mamba-cache-size 32 -> 16 in the editor,
    pre-flight by the real resolver in the run's environment, relaunch; SGLang allocates 16."""
    node, run = real_qnext
    node.apply_env(monkeypatch)
    app = console_for(node_for(ALIAS), python=str(node.python), poll_s=1.0)
    async with app.run_test(size=(160, 50)) as pilot:
        st = app.state
        await wait_until(pilot, lambda: st.run and st.run.run_id == run.run_id, what="the run", timeout=60)
        await wait_until(pilot, lambda: st.status == "ready", what="ready", timeout=120)
        await wait_until(pilot, lambda: st.mamba_pool_slots == 32, what="the Mamba pool", timeout=60)
        await pilot.press("e")
        await wait_until(pilot, lambda: type(app.screen).__name__ == "EditorScreen", what="the editor")
        ed = app.screen
        await wait_until(pilot, lambda: ed.query("#f-max_mamba_cache_size"), what="the form", timeout=180)
        field = ed.query_one("#f-max_mamba_cache_size")
        assert field.value == "32"
        field.value = "16"
        await pilot.pause(0.2)
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: ed.verdict is not None or ed.verdict_error, what="the pre-flight", timeout=240)
        assert ed.verdict_error is None and ed.verdict["ok"], ed.verdict_error or ed.verdict.get("error")
        assert ed.verdict["fields"]["max_mamba_cache_size"]["value"] == 16
        await pilot.press("ctrl+y")
        await wait_until(pilot, lambda: st.run and st.run.run_id != run.run_id, what="the new run", timeout=240)
        new_dir = node.sshd.node_home / "runs" / st.run.run_id
        await wait_until(pilot, lambda: st.status == "ready", what="the new run ready", timeout=420)
        new_log = (new_dir / "log").read_text()
        assert POOL_LINE.findall(new_log) == ["16"], new_log[-3000:]
        # the new run kept the old one's environment: the CPU kernels it needs to serve at all
        assert json.loads((new_dir / "env.json").read_text()) == run.env
        await wait_until(pilot, lambda: st.mamba_pool_slots == 16, what="the new Mamba pool", timeout=60)
