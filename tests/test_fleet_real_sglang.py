"""``mambaconsole fleet`` on a real SGLang 0.5.23 server (plain Qwen3 on CPU, started by
``mambaconsole launch`` over the loopback sshd: tests/fixtures/real_sglang.py) and a simulated
0.5.23 server, both behind the real router (smg from PyPI). What the fleet reads from the real
server (its /health, /server_info, /v1/loads, /metrics histograms) is checked against the real
server's own answers, read here directly."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from fixtures.sim import pick_free_port
from mambaconsole import cli
from mambaconsole.sim import demo

pytestmark = [pytest.mark.real_sglang, pytest.mark.sshd]

SMG = Path(sys.executable).parent / "smg"


def test_real_and_simulated_worker_behind_the_real_router(real_qwen3, sim_process, capsys, monkeypatch, tmp_path):
    _node, run = real_qwen3
    monkeypatch.setenv("MAMBACONSOLE_CONFIG", str(tmp_path / "none.toml"))
    sim_port = pick_free_port()
    sim = sim_process("0.5.23", demo.working_argv("0.5.23", port=sim_port), speed=20, name="sim")
    sim.wait_for("The server is fired up and ready to roll!", timeout=60)
    S = f"http://127.0.0.1:{sim_port}"
    for text in ("The quick brown fox", "Hello world"):
        assert run.generate(text, max_new_tokens=4)["meta_info"]["completion_tokens"] == 4

    port, prom = pick_free_port(), pick_free_port()
    proc = subprocess.Popen([str(SMG), "launch", "--host", "127.0.0.1", "--port", str(port),
                             "--prometheus-host", "127.0.0.1", "--prometheus-port", str(prom),
                             "--worker-urls", run.url, S],
                            stdout=open(tmp_path / "router.log", "wb"), stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                ws = httpx.get(url + "/workers", timeout=2).json().get("workers", [])
                if len(ws) == 2 and all(w.get("is_healthy") for w in ws):
                    break
            except (httpx.HTTPError, ValueError):
                pass
            time.sleep(0.5)
        else:
            raise AssertionError((tmp_path / "router.log").read_text()[-3000:])

        capsys.readouterr()
        assert cli.main(["fleet", url, "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        rows = {w["url"]: w for w in out["workers"]}
        real = rows[run.url]
        # the real server's own answers, read directly
        loads = run.get("/v1/loads").json()
        info = run.get("/server_info").json()
        assert (real["router_health"], real["engine_health"]) == ("healthy", "healthy")
        assert (real["version"], real["version_source"]) == (loads["version"], "engine") == ("0.5.23", "engine")
        assert real["load_source"] == "engine /v1/loads"
        assert real["running"] == sum(x["num_running_reqs"] for x in loads["loads"])
        assert real["role"] == "regular" and info.get("disaggregation_mode") == "null"
        # two requests finished: the real TTFT histogram has them (one scrape: since start)
        assert real["ttft_p50_s"] is not None and real["ttft_p50_s"] > 0
        assert real["latency_window_s"] is None
        assert out["disagreements"] == []
        # two different models behind one router: the replica diff says so
        diffs = {d["field"]: d for d in out["args_differences"]}
        assert diffs["model_path"]["between"] == "regular replicas"
        assert diffs["model_path"]["values"][S] == demo.MODEL
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
