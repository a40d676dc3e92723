"""No crash, hang or unbounded read on odd input (issue 13 item 4): a /server_info that answers
a JSON list, string or number, nesting 50,000 levels deep or 5 MB long, next to a /metrics that
keeps answering; inspect on 50k-deep JSON, /dev/zero, a FIFO, a folder; 1e400 in a log and in
/metrics. Served by a real HTTP server on loopback; the CLI run as a process."""

from __future__ import annotations

import asyncio
import contextlib
import http.server
import json
import os
import subprocess
import sys
import threading

import pytest

from mambaconsole.bounded import JsonTooDeep, json_loads
from mambaconsole.node.local import LocalNode
from mambaconsole.state import ConsoleState
from mambaconsole.session.feed import Feed
from mambaconsole.session.settings import HostSettings

pytestmark = pytest.mark.timeout(120)

METRICS = b'# TYPE sglang:num_running_reqs gauge\nsglang:num_running_reqs{model_name="m",tp_rank="0"} 3\n'
DEEP = b'{"a":' * 50000 + b"1" + b"}" * 50000
ANSWERS = {
    "list": (json.dumps([1, 2, 3]).encode(), "list"),
    "string": (b'"hello"', "str"),
    "number": (b"42", "int"),
    "deep": (DEEP, "nested deeper"),
    "huge": (json.dumps({"model_path": "m", "tp_size": 1, "chat_template": "x" * (5 << 20)}).encode(), "MiB"),
    "overflow": (b'{"model_path": "m", "tp_size": 1, "x": 1e400}', "out of range"),
}


@pytest.fixture
def server():
    """answer[0] = the /server_info body now served; /metrics always answers METRICS."""
    answer = [b"{}"]

    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = METRICS if self.path == "/metrics" else answer[0]
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield srv.server_port, answer
    srv.shutdown()


@pytest.mark.parametrize("name", list(ANSWERS))
async def test_an_odd_server_info_is_an_error_and_metrics_go_on(server, name):
    port, answer = server
    answer[0], said = ANSWERS[name]
    async with LocalNode() as node:
        feed = Feed(node, HostSettings(port=port), adopt=False)
        try:
            info = await feed.server_info(port)
            assert info.data is None and said in info.error, info.error
            state = ConsoleState()
            state.apply(info)  # the console keeps going: nothing to compare, no traceback
            assert state.server_info is None and state.server_info_error == info.error
            m = await feed.metrics(port)
            assert m.error is None and m.values["sglang:num_running_reqs"] == 3
        finally:
            await feed.close()


def test_json_loads_bounds():
    assert json_loads(b'{"a": [1, {"b": 2.5}]}') == {"a": [1, {"b": 2.5}]}
    with pytest.raises(JsonTooDeep):
        json_loads(DEEP)
    with pytest.raises(JsonTooDeep):
        json_loads("[" * 65 + "]" * 65)
    assert json_loads("[" * 64 + "]" * 64)
    for bad in ("1e400", "[-1e400]", "NaN", '{"x": Infinity}'):
        with pytest.raises(ValueError):
            json_loads(bad)


def _inspect(*args: str, stdin=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mambaconsole", "inspect", *args], capture_output=True, text=True,
                          timeout=60, stdin=stdin)


def test_inspect_refuses_what_it_cannot_read_whole(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_bytes(DEEP)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path, said in ((deep, "nested deeper than 64 levels"), ("/dev/zero", "is a device"),
                       (fifo, "is a FIFO"), (tmp_path, "is a folder")):
        r = _inspect(str(path))
        assert r.returncode == 1 and said in r.stderr and "Traceback" not in r.stderr, (path, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1


def test_1e400_is_no_value(tmp_path):
    log = tmp_path / "x.log"
    log.write_text("[2026-01-01 00:00:00] Decode batch. #running-req: 1, #token: 10, token usage: 0.01, "
                   "accept len: 1e400, gen throughput (token/s): 10.0, #queue-req: 0\n")
    r = _inspect(str(log), "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert "inf" not in r.stdout.lower() and out["spec"]["mean_accept_len"] is None
    metrics = tmp_path / "m.txt"
    metrics.write_text("# TYPE sglang:spec_accept_length gauge\nsglang:spec_accept_length{model_name=\"m\"} 1e400\n")
    r = _inspect(str(metrics))
    assert r.returncode == 0 and "inf" not in r.stdout, r.stdout


async def test_a_log_truncated_while_not_followed_is_read_again_from_its_start(tmp_path):
    """The console had read 4,000 bytes; meanwhile (the link down) the log was truncated and
    holds 3 new lines (45 bytes): the agent says so and sends them from offset 0, instead of
    starting at the end (offset 45) and skipping them."""
    from mambaconsole.node.agent import agent_records, log_lines

    log = tmp_path / "server.log"
    new = [b"after truncate 1", b"after truncate 2", b"after truncate 3"]
    log.write_bytes(b"\n".join(new) + b"\n")
    records = []

    async def collect():
        async with LocalNode() as node:
            async for rec in agent_records(node, python=sys.executable, follow=str(log), offset=4000, interval=0):
                records.append(rec)
                if sum(len(log_lines(r)) for r in records if r["type"] == "log") == 3:
                    break

    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(collect(), 20)
    kinds = [r["type"] for r in records]
    reset = records[kinds.index("log_reset")]
    assert reset["reason"] == "truncated" and reset["was"] == 4000 and reset["size"] == log.stat().st_size
    assert kinds.index("log_reset") < kinds.index("log")
    lines = [ln for r in records if r["type"] == "log" for ln in log_lines(r)]
    assert [(ln.raw, ln.offset) for ln in lines] == [(new[0], 0), (new[1], 17), (new[2], 34)]


def test_the_console_says_the_log_started_over():
    from mambaconsole.state import LogLine, LogLines, RunInfo

    state = ConsoleState()
    state.run = RunInfo("r1")
    state.apply(LogLines("r1", (LogLine("r1", 0, "after truncate 1"),), reset=True))
    assert state.notice and "truncated" in state.notice and "start" in state.notice


async def test_the_http_client_is_made_off_the_event_loop(server, monkeypatch):
    """The first poll does not hold the event loop: the httpx client (its import and its SSL
    context, which loads the CA bundle: 50-60 ms of CPU) is made in a worker thread, once."""
    import httpx

    port, answer = server
    answer[0] = b'{"tp_size": 1}'
    made_in = []

    class Recording(httpx.AsyncClient):
        def __init__(self, *a, **kw):
            made_in.append(threading.current_thread())
            super().__init__(*a, **kw)

    monkeypatch.setattr(httpx, "AsyncClient", Recording)
    async with LocalNode() as node:
        feed = Feed(node, HostSettings(port=port), adopt=False)
        try:
            info, m = await feed.server_info(port), await feed.metrics(port)
            assert info.error is None and info.data == {"tp_size": 1}
            assert m.error is None and m.values["sglang:num_running_reqs"] == 3
            assert (await feed.server_info(port)).error is None
        finally:
            await feed.close()
    assert len(made_in) == 1  # one client for every poll
    assert made_in[0] is not threading.current_thread()


FIRST_POLL = r"""
import asyncio, http.server, sys, threading
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.send_header("Content-Length", "2"); self.end_headers(); self.wfile.write(b"{}")
    def log_message(self, *a):
        pass
srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
threading.Thread(target=srv.serve_forever, daemon=True).start()
from mambaconsole.node.local import LocalNode
from mambaconsole.session.feed import Feed
from mambaconsole.session.settings import HostSettings
on_loop = []
class Noting:  # every module imported for the first time, and on which thread
    def find_spec(self, name, path=None, target=None):
        if threading.current_thread() is threading.main_thread():
            on_loop.append(name)
        return None
async def main():
    async with LocalNode() as node:
        feed = Feed(node, HostSettings(port=srv.server_port), adopt=False)
        sys.meta_path.insert(0, Noting())
        try:
            info = await feed.server_info(srv.server_port)
            assert info.error is None, info.error
        finally:
            sys.meta_path.pop(0)
            await feed.close()
asyncio.run(main())
print(" ".join(n for n in on_loop if n.split(".")[0] in ("httpx", "httpcore", "anyio", "h11", "ssl", "certifi")))
"""


def test_the_first_poll_imports_nothing_of_the_http_stack_on_the_event_loop():
    """In a fresh interpreter (nothing imported by earlier tests): the first /server_info poll
    imports httpx, httpcore and anyio's asyncio backend in the client's worker thread, none of
    them on the event loop's thread (the first request imported anyio's backend there: ~25 ms)."""
    out = subprocess.run([sys.executable, "-c", FIRST_POLL], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "", f"imported on the event loop: {out.stdout.strip()}"
