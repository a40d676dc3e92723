"""The simulator honours ``--nnodes/--node-rank/--dist-init-addr`` as real SGLang does
(``mambaconsole.sglang.multinode``'s doc; the real output in ``tests/data/multinode/``): rank 0
waits silently at distributed init until its peer joined, a rank >= 1 serves only a stand-in
``/health``, a group that does not form ends in torch's own timeout errors, and a peer's death
leaves rank 0 hanging (NCCL: no more batches, ``/health`` 503). Two real processes on this
machine, the second binding its own loopback address as a second node would."""

from __future__ import annotations

import re
import signal
import time

import httpx
import pytest

from fixtures.sim import pick_free_port
from mambaconsole.sglang.multinode import log_phase

ARGS = ["--model-path", "Qwen/Qwen3.6-27B", "--max-mamba-cache-size", "24", "--mamba-full-memory-ratio", "0.4",
        "--nnodes", "2"]


def _argv(port: int, dist: int, rank: int, *extra: str) -> list[str]:
    return [*ARGS, "--port", str(port), "--dist-init-addr", f"127.0.0.1:{dist}", "--node-rank", str(rank), *extra]


@pytest.mark.parametrize("version", ["0.5.11", "0.5.23"])
def test_rank0_waits_silently_then_both_serve(sim_process, version):
    port, dist = pick_free_port(), pick_free_port()
    begin = "Init torch distributed begin." if version == "0.5.11" else "Init parallel begin."
    end = "Init torch distributed ends." if version == "0.5.11" else "Init parallel ends."
    r0 = sim_process(version, _argv(port, dist, 0), speed=20, name="rank0")
    r0.wait_for(begin)
    time.sleep(1.5)  # far longer than the simulated distributed init (0.05 s at this speed)
    assert end not in r0.text() and r0.proc.poll() is None
    assert log_phase(r0.lines()).dist_wait
    r1 = sim_process(version, _argv(port, dist, 1), speed=20, name="rank1",
                     env={"MAMBACONSOLE_SIM_BIND_HOST": "127.0.0.2"})
    r0.wait_for("The server is fired up and ready to roll!")
    r1.wait_for(f"Dummy health check server started in background thread at 127.0.0.2:{port}")
    assert end in r1.text()
    assert httpx.get(f"http://127.0.0.1:{port}/health", timeout=5).status_code == 200
    # rank 1 answers /health only (SGLang's stand-in), with no access lines
    assert httpx.get(f"http://127.0.0.2:{port}/health", timeout=5).status_code == 200
    assert httpx.get(f"http://127.0.0.2:{port}/server_info", timeout=5).status_code == 404
    assert "GET /health" not in r1.out.read_text()
    p1 = log_phase(r1.lines())
    assert p1.follower_up and not p1.dist_wait

    # rank 1 dies: rank 0 hangs in its next collective (NCCL): no more batches, /health 503
    r1.proc.send_signal(signal.SIGKILL)
    r1.wait()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if httpx.get(f"http://127.0.0.1:{port}/health", timeout=5).status_code == 503:
            break
        time.sleep(0.2)
    assert httpx.get(f"http://127.0.0.1:{port}/health", timeout=5).status_code == 503
    n = r0.text().count("Decode batch")
    time.sleep(1.0)  # 10 decode intervals at this speed
    assert r0.text().count("Decode batch") == n and r0.proc.poll() is None


def test_rank0_alone_times_out_with_torchs_error(sim_process):
    r0 = sim_process("0.5.23", _argv(pick_free_port(), pick_free_port(), 0, "--dist-timeout", "1"), name="rank0")
    assert r0.wait(30) == -signal.SIGKILL  # the launcher killed its own tree
    text = r0.text()
    assert "torch.distributed.DistStoreError: Timed out after 2 seconds waiting for clients. 1/2 clients joined." in text
    assert "Received sigquit from a child process" in text
    assert r0.truth()["outcome"] == "dist_timeout"


def test_rank1_without_rank0_times_out_connecting(sim_process):
    dist = pick_free_port()
    r1 = sim_process("0.5.23", _argv(pick_free_port(), dist, 1, "--dist-timeout", "1"), name="rank1")
    assert r1.wait(30) == -signal.SIGKILL
    text = r1.text()
    msg = f"The client socket has timed out after 1000ms while trying to connect to (127.0.0.1, {dist})."
    assert f"socket.cpp:1028] [c10d] {msg}" in text
    assert f"torch.distributed.DistNetworkError: {msg}" in text
    assert log_phase(r1.lines()).failure.endswith(msg)


def _shape(line: str) -> re.Pattern:
    """A real line as a pattern: numbers (and the address) may differ, the words may not."""
    return re.compile(re.sub(r"\\\d+(?:\\\.\\\d+)*|\d+(?:\.\d+)*", r"[\\d.]+", re.escape(line.strip())))


def test_sim_failures_have_the_real_0523_lines_shape(sim_process):
    from pathlib import Path

    data = Path(__file__).parent / "data" / "multinode"
    real0 = next(x for x in (data / "0.5.23-rank0-alone-timeout.log").read_text().splitlines()
                 if x.startswith("torch.distributed.DistStoreError"))
    real1 = [x for x in (data / "0.5.23-rank1-alone-timeout.log").read_text().splitlines()
             if x.startswith("torch.distributed.DistNetworkError") or "socket.cpp:1028] [c10d]" in x]
    r0 = sim_process("0.5.23", _argv(pick_free_port(), pick_free_port(), 0, "--dist-timeout", "1"), name="rank0")
    r1 = sim_process("0.5.23", _argv(pick_free_port(), pick_free_port(), 1, "--dist-timeout", "1"), name="rank1")
    r0.wait(30), r1.wait(30)
    assert any(_shape(real0).fullmatch(x) for x in r0.lines()), real0
    for real in real1:
        assert any(_shape(real).fullmatch(x.strip()) for x in r1.lines()), real
