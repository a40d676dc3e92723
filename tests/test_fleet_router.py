"""``mambaconsole fleet`` against the real router: smg from PyPI (the test extra) in front of
simulated 0.5.23 servers, as a prefill/decode pair and as two replicas. All on 127.0.0.1.

The router is started with ``--prometheus-host 127.0.0.1 --prometheus-port N`` (without them
it binds 0.0.0.0:29000)."""

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

SMG = Path(sys.executable).parent / "smg"


def _sim_argv(port: int, *extra: str) -> list[str]:
    return demo.working_argv("0.5.23", port=port) + list(extra)


@pytest.fixture
def router(tmp_path):
    procs: list[subprocess.Popen] = []

    def start(*args: str, workers: int) -> str:
        assert SMG.exists(), f"{SMG} missing: install the test extra (pip install -e '.[test]')"
        port, prom = pick_free_port(), pick_free_port()
        log = open(tmp_path / f"router-{port}.log", "wb")
        proc = subprocess.Popen([str(SMG), "launch", "--host", "127.0.0.1", "--port", str(port),
                                 "--prometheus-host", "127.0.0.1", "--prometheus-port", str(prom), *args],
                                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        procs.append(proc)
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            assert proc.poll() is None, (tmp_path / f"router-{port}.log").read_text()[-3000:]
            try:
                body = httpx.get(url + "/workers", timeout=2).json()
                if len(body.get("workers", [])) == workers and all(w.get("is_healthy") for w in body["workers"]):
                    return url
            except (httpx.HTTPError, ValueError):
                pass
            time.sleep(0.3)
        raise AssertionError("router did not register the workers:\n" + (tmp_path / f"router-{port}.log").read_text()[-3000:])

    yield start
    for p in procs:
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def _ready(run) -> None:
    run.wait_for("The server is fired up and ready to roll!", timeout=60)


def _fleet_json(capsys, *args: str) -> tuple[int, dict]:
    capsys.readouterr()
    rc = cli.main(["fleet", *args, "--json"])
    return rc, json.loads(capsys.readouterr().out)


def test_pd_pair_behind_the_real_router(sim_process, router, capsys, monkeypatch, tmp_path):
    """A prefill and a decode server with different Mamba SSM dtypes: the fleet shows both roles
    healthy on both sides, and the dtype is the first line of the diff. Then the decode server
    is killed: its engine is dead while the router still says healthy."""
    monkeypatch.setenv("MAMBACONSOLE_CONFIG", str(tmp_path / "none.toml"))
    pp, dp = pick_free_port(), pick_free_port()
    prefill = sim_process("0.5.23", _sim_argv(pp, "--disaggregation-mode", "prefill", "--mamba-ssm-dtype", "float32"),
                          speed=20, name="prefill")
    decode = sim_process("0.5.23", _sim_argv(dp, "--disaggregation-mode", "decode", "--mamba-ssm-dtype", "bfloat16"),
                         speed=20, seed=1, name="decode")
    _ready(prefill)
    _ready(decode)
    P, D = f"http://127.0.0.1:{pp}", f"http://127.0.0.1:{dp}"
    url = router("--pd-disaggregation", "--prefill", P, "--decode", D, workers=2)

    rc, out = _fleet_json(capsys, url)
    assert rc == 0
    rows = {w["url"]: w for w in out["workers"]}
    assert set(rows) == {P, D}
    assert (rows[P]["role"], rows[D]["role"]) == ("prefill", "decode")
    for w in rows.values():
        assert (w["router_health"], w["engine_health"], w["version"]) == ("healthy", "healthy", "0.5.23")
        assert isinstance(w["running"], int) and isinstance(w["queued"], int)
    assert out["disagreements"] == []
    first = out["args_differences"][0]
    assert (first["field"], first["between"], first["matters"]) == ("mamba_ssm_dtype", "prefill/decode", True)
    assert first["values"] == {P: "float32", D: "bfloat16"}

    assert decode.stop() is not None
    rc, out = _fleet_json(capsys, url)
    rows = {w["url"]: w for w in out["workers"]}
    assert rows[D]["router_health"] == "healthy"  # the router has not noticed yet
    assert rows[D]["engine_health"] == "dead"
    assert rows[P]["engine_health"] == "healthy"
    assert {"worker": D, "what": "health", "router": "healthy", "engine": "dead (connection refused)"} in out["disagreements"]

    # the table marks the row and says it in words
    capsys.readouterr()
    cli.main(["fleet", url, "--once"])
    text = capsys.readouterr().out
    line = next(ln for ln in text.splitlines() if D in ln and "dead" in ln)
    assert line.startswith("!")
    assert f"! {D}: health: router says healthy, engine says dead (connection refused)" in text


def test_two_replicas_behind_the_real_router(sim_process, router, capsys, monkeypatch, tmp_path):
    """Two regular workers launched with different caps: any difference between replicas is
    listed; the load columns come from the engines."""
    monkeypatch.setenv("MAMBACONSOLE_CONFIG", str(tmp_path / "none.toml"))
    a_port, b_port = pick_free_port(), pick_free_port()
    a = sim_process("0.5.23", _sim_argv(a_port), speed=20, name="a")
    b = sim_process("0.5.23", _sim_argv(b_port, "--schedule-policy", "lpm"), speed=20, seed=3, name="b")
    _ready(a)
    _ready(b)
    A, B = f"http://127.0.0.1:{a_port}", f"http://127.0.0.1:{b_port}"
    url = router("--worker-urls", A, B, workers=2)
    rc, out = _fleet_json(capsys, url)
    assert rc == 0
    assert {w["url"]: w["role"] for w in out["workers"]} == {A: "regular", B: "regular"}
    diffs = [(d["field"], d["between"]) for d in out["args_differences"]]
    assert ("schedule_policy", "regular replicas") in diffs
    assert all(field not in ("port", "random_seed") for field, _ in diffs)
    for w in out["workers"]:
        assert w["load_source"] == "engine /v1/loads"  # the sim serves 0.5.23's /v1/loads (was: 404, /metrics)
        assert w["kv_usage"] is not None and w["mamba_usage"] is not None


def test_an_unreachable_router_is_one_line_and_exit_1(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("MAMBACONSOLE_CONFIG", str(tmp_path / "none.toml"))
    port = pick_free_port()
    rc, out = _fleet_json(capsys, f"http://127.0.0.1:{port}")
    assert rc == 1
    assert out["workers"] == []
    assert out["router_errors"] == {f"http://127.0.0.1:{port}": f"http://127.0.0.1:{port}/workers: connection refused"}


@pytest.mark.sshd
def test_via_an_ssh_host_and_a_host_target(sim_process, router, capsys, monkeypatch, tmp_path, ssh_home):
    """--via gpu-node (a loopback sshd): the router and the worker it lists are reached through
    SSH forwards, and the loopback worker maps to the via host (Enter's target). A host target
    (the settings' [hosts.local] port): one row, its role from the engine, no router."""
    port = pick_free_port()
    cfg = tmp_path / "config.toml"
    cfg.write_text(f'[hosts.local]\nport = {port}\n')
    monkeypatch.setenv("MAMBACONSOLE_CONFIG", str(cfg))
    sim = sim_process("0.5.23", _sim_argv(port, "--disaggregation-mode", "decode"), speed=20, name="w")
    _ready(sim)
    W = f"http://127.0.0.1:{port}"
    url = router("--worker-urls", W, workers=1)

    rc, out = _fleet_json(capsys, url, "--via", "gpu-node")
    assert rc == 0
    [row] = out["workers"]
    assert (row["url"], row["host"], row["router_health"], row["engine_health"]) == (W, "gpu-node", "healthy", "healthy")
    assert isinstance(row["running"], int)
    # the router registered it as a regular worker; the engine was launched as a decode server
    assert {"worker": W, "what": "role", "router": "regular", "engine": "decode"} in out["disagreements"]

    rc, out = _fleet_json(capsys, "local")
    [row] = out["workers"]
    assert (row["url"], row["host"], row["role"], row["role_source"]) == (f"local:{port}", "local", "decode", "engine")
    assert row["router_health"] is None and row["engine_health"] == "healthy" and out["disagreements"] == []


async def test_server_info_is_read_again_only_every_30_s(sim_process):
    """/server_info is big (556 keys on a real 0.5.23): a healthy engine's is reused for 30 s;
    counted in the sim's own access lines."""
    from mambaconsole.session.fleet import Fleet, Target

    port = pick_free_port()
    sim = sim_process("0.5.23", _sim_argv(port), speed=20, name="w")
    _ready(sim)
    now = [1000.0]
    async with Fleet([Target("host", host="local")], hosts={"local": port}, clock=lambda: now[0]) as fleet:
        for t in (1000.0, 1010.0, 1029.0, 1031.0):
            now[0] = t
            snap = await fleet.poll()
            assert snap.workers[0].args is not None
    served = [ln for ln in sim.out.read_text().splitlines() if '"GET /server_info HTTP/1.1" 200' in ln]
    assert len(served) == 2  # at t=1000 and t=1031
