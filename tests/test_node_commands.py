"""The node commands through the CLI: doctor, launch, runs, stop (against the real sshd)."""

import http.server
import json
import socket
import subprocess
import sys
import threading
import time

import pytest

from mambaconsole.cli import main


def cli(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_doctor_gpu_node(ssh_home, capsys):
    # this test python has no sglang: the node can be watched, not launched on (exit 1)
    rc, out, err = cli(capsys, "doctor", "gpu-node", "--python", sys.executable, "--json")
    assert rc == 1
    report = json.loads(out)
    checks = {c["name"]: c for c in report["checks"]}
    assert (report["ok"], report["can_watch"], report["can_launch"]) == (False, True, False)
    assert checks["connection"]["status"] == "ok" and checks["connection"]["rtt_ms"] > 0
    assert f"port {ssh_home.port}" in checks["connection"]["detail"]
    tmux_v = subprocess.run(["tmux", "-V"], capture_output=True, text=True).stdout.split()[-1]
    assert checks["tmux"]["version"] == tmux_v
    assert checks["python"]["version"] == "%d.%d.%d" % sys.version_info[:3]
    assert checks["run store"]["path"] == str(ssh_home.sshd.node_home)
    assert checks["gpu"]["required"] is False
    assert (checks["sglang"]["status"], checks["sglang"]["required"], checks["sglang"]["needed_for"]) == (
        "fail", True, "launch")
    # the readable form names every check, the verdict and the next step
    rc, out, err = cli(capsys, "doctor", "gpu-node", "--python", sys.executable)
    assert rc == 1 and "round trip" in out and "tmux" in out
    assert "gpu-node can be watched" in out and "cannot launch" in out and "--python PATH" in out
    assert "can host a session" not in out
    assert err.count("\n") == 1 and "sglang" in err and "--python PATH" in err


def test_doctor_with_sglang_can_host(ssh_home, capsys, tmp_path):
    # a python that imports a (stand-in) sglang 0.5.11 package
    fake = tmp_path / "fake"
    (fake / "sglang").mkdir(parents=True)
    (fake / "sglang" / "__init__.py").write_text('__version__ = "0.5.11"\n')
    py = tmp_path / "py"
    py.write_text(f"#!/bin/sh\nPYTHONPATH={fake} exec {sys.executable} \"$@\"\n")
    py.chmod(0o755)
    rc, out, err = cli(capsys, "doctor", "gpu-node", "--python", str(py), "--json")
    assert rc == 0, err
    report = json.loads(out)
    checks = {c["name"]: c for c in report["checks"]}
    assert (report["ok"], report["can_watch"], report["can_launch"]) == (True, True, True)
    assert checks["sglang"]["version"] == "0.5.11" and str(fake / "sglang") in checks["sglang"]["detail"]
    rc, out, err = cli(capsys, "doctor", "gpu-node", "--python", str(py))
    assert rc == 0 and "gpu-node can host a session" in out and err == ""


def test_doctor_port_states(ssh_home, capsys):
    class Health(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200 if self.path == "/health" else 404)
            self.end_headers()

        def log_message(self, *a):
            pass

    srv = http.server.HTTPServer(("127.0.0.1", 0), Health)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        rc, out, _ = cli(capsys, "doctor", "gpu-node", "--port", str(srv.server_port), "--json")
        port = [c for c in json.loads(out)["checks"] if c["name"].startswith("port")][0]
        assert port["state"] == "serving"
    finally:
        srv.shutdown()
    rc, out, _ = cli(capsys, "doctor", "gpu-node", "--port", str(ssh_home.port), "--json")
    port = [c for c in json.loads(out)["checks"] if c["name"].startswith("port")][0]
    assert port["state"] == "in use" and port["status"] == "warn"


def test_doctor_unreachable_is_one_line(ssh_home, capsys):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    rc, out, err = cli(capsys, "doctor", f"127.0.0.1:{port}")
    assert rc == 1
    assert len(err.strip().splitlines()) == 1 and "connection" in err and "refused" in err.lower()


def test_doctor_missing_python_fails(ssh_home, capsys):
    rc, out, err = cli(capsys, "doctor", "gpu-node", "--python", "/nonexistent/python3")
    assert rc == 1 and "python" in err and len(err.strip().splitlines()) == 1


def test_launch_runs_stop(ssh_home, capsys, tmp_path):
    # a stand-in "sglang" package, launched as `python -m sglang.launch_server ARGS`
    pkg = tmp_path / "sglang"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "launch_server.py").write_text(
        "import sys, time\nprint('server argv', sys.argv[1:], flush=True)\nwhile True: time.sleep(0.05)\n")
    rc, out, err = cli(capsys, "launch", "gpu-node", "--python", sys.executable, "--port", "31234",
                       "--cwd", str(tmp_path), "--", "--model-path", "/m", "--note", "a b; $(x)")
    assert rc == 0, err
    run_id = out.strip()
    assert len(out.strip().splitlines()) == 1
    run_dir = ssh_home.sshd.node_home / "runs" / run_id
    argv = json.loads((run_dir / "argv.json").read_text())
    assert argv == [sys.executable, "-m", "sglang.launch_server", "--model-path", "/m", "--note", "a b; $(x)",
                    "--port", "31234"]
    deadline = time.monotonic() + 30
    while b"server argv" not in (run_dir / "log").read_bytes():
        assert time.monotonic() < deadline
        time.sleep(0.02)

    rc, out, err = cli(capsys, "runs", "gpu-node", "--json", "--no-adopt")
    [rec] = json.loads(out)
    assert rec["run_id"] == run_id and rec["state"] == "running" and rec["argv"] == argv
    rc, out, err = cli(capsys, "runs", "gpu-node", "--no-adopt")
    assert run_id in out and "running" in out and "--note 'a b; $(x)'" in out

    rc, out, err = cli(capsys, "stop", "gpu-node", "--int-timeout", "10")
    assert rc == 0 and out.startswith(f"{run_id}: exited") and "SIGINT" in out
    rc, out, err = cli(capsys, "runs", "gpu-node", "--json", "--no-adopt")
    assert json.loads(out)[0]["state"] == "exited"
    rc, out, err = cli(capsys, "stop", "gpu-node")
    assert rc == 1 and "live runs: none" in err


def test_launch_refused_while_lock_held(ssh_home, capsys):
    lock = ssh_home.sshd.node_home / "relaunch.lock"
    lock.write_text(json.dumps({"holder": "alice@laptop", "pid": 4321, "since": time.time(), "token": "t"}))
    rc, out, err = cli(capsys, "launch", "gpu-node", "--", "--model-path", "/m")
    assert rc == 1 and out == ""
    assert len(err.strip().splitlines()) == 1 and "alice@laptop" in err and "pid 4321" in err
    assert not (ssh_home.sshd.node_home / "runs").exists() or not any((ssh_home.sshd.node_home / "runs").iterdir())


def test_launch_bad_python_reports_exit(node_home, capsys):
    rc, out, err = cli(capsys, "launch", "local", "--python", "/nonexistent/python", "--", "--x")
    assert rc == 1 and out.strip()  # the run id is still printed
    assert "exited at once with code 127" in err


@pytest.mark.parametrize("args", [["--port", "1", "--", "--port", "2"], ["--env", "1BAD=x"]])
def test_launch_usage_errors(node_home, capsys, args):
    rc, out, err = cli(capsys, "launch", "local", *args)
    assert rc == 2 and len(err.strip().splitlines()) == 1
