"""``mambaconsole doctor HOST [--python P] [--port N] [--json]``: can this node host a session?

Checks, in order, and prints one line each (``ok`` / ``warn`` / ``FAIL``):

==========  ===========  ======================================================================
check       needed for   what
==========  ===========  ======================================================================
connection  watch        ssh login (its round-trip time, median of 3 commands); ``local``: none
python      watch        the node's python runs, version >= 3.8 (``--python``, else the host's
                         ``python`` setting in config.toml, else python3)
tmux        watch        ``tmux -V`` on the node (runs live in tmux)
run store   watch        ``$MAMBACONSOLE_HOME`` (default ``~/.mambaconsole``) is writable
sglang      launch       the version that python imports, or why it cannot: without it the
                         console can watch (follow a server's log, adopt one started by hand,
                         GPUs, runs) but cannot launch, relaunch or resolve ServerArgs
gpu         -            pynvml / nvidia-smi: GPU count and memory; "no GPU" with the reason
port        -            the server port (``--port``, else the host's setting, else 30000):
                         free, serving (``/health`` answers) or taken by another program
==========  ===========  ======================================================================

Exit status 0 when every check needed to watch and to launch passes; else 1, with one line
per failing check on stderr and the verdict saying what the node can do and the next step
(``--python PATH``, or ``python = "..."`` under ``[hosts.HOST]`` in the settings file).
``--json`` prints ``{"host", "ok", "can_watch", "can_launch", "checks": [{"name", "status",
"required", "needed_for", "detail", ...}]}`` (``required``: needed to watch or to launch;
``ok`` = ``can_launch``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

from mambaconsole.commands._common import add_host, run_async
from mambaconsole.errors import ConsoleError
from mambaconsole.node import LOCAL, connect
from mambaconsole.node.agent import agent_once
from mambaconsole.node.base import Node, NodeError

HELP = "check a node: ssh, tmux, python, sglang, GPUs, port (exit 0 when it can host a session)"

DEFAULT_PORT = 30000

PYTHON_PROBE = r"""
import json, os, sys, tempfile
out = {"version": "%d.%d.%d" % sys.version_info[:3], "executable": sys.executable}
home = os.path.abspath(os.path.expanduser(os.environ.get("MAMBACONSOLE_HOME") or "~/.mambaconsole"))
out["home"] = home
try:
    os.makedirs(home, exist_ok=True)
    fd, p = tempfile.mkstemp(dir=home, prefix=".doctor-")
    os.close(fd); os.unlink(p)
    out["home_ok"] = True
except OSError as exc:
    out["home_ok"] = False
    out["home_error"] = "%s: %s" % (home, exc.strerror or exc)
try:
    import sglang
    out["sglang"] = getattr(sglang, "__version__", None) or "unknown version"
    out["sglang_path"] = os.path.dirname(sglang.__file__)
except BaseException as exc:
    out["sglang"] = None
    out["sglang_error"] = ("%s: %s" % (type(exc).__name__, exc)).strip().splitlines()[-1][:300]
port = int(sys.argv[1])
import socket
s = socket.socket()
s.settimeout(2)
try:
    s.connect(("127.0.0.1", port))
    out["port"] = "in use"
except OSError:
    out["port"] = "free"
finally:
    s.close()
if out["port"] == "in use":
    import urllib.request
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/health" % port, timeout=3) as r:
            out["health"] = r.status
    except Exception as exc:
        out["health"] = None
        out["health_error"] = str(getattr(exc, "code", "") or getattr(exc, "reason", "") or exc)[:200]
print(json.dumps(out))
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_host(parser)
    parser.add_argument("--python", help="the node's python for the server (default: the host's python setting, "
                                         "else python3)")
    parser.add_argument("--port", type=int, help=f"the server port (default: the host's setting, else {DEFAULT_PORT})")
    parser.add_argument("--json", action="store_true", help="print the checks as JSON")


_NEEDED_FOR = {"connection": "watch", "python": "watch", "tmux": "watch", "run store": "watch", "sglang": "launch"}


def _check(name: str, status: str, detail: str, required: bool, **extra) -> dict:
    return {"name": name, "status": status, "required": required, "needed_for": _NEEDED_FOR.get(name),
            "detail": detail, **extra}


async def _connection(host: str) -> tuple[Node | None, dict]:
    if host == LOCAL:
        return await connect(host), _check("connection", "ok", "local (no SSH)", True)
    try:
        node = await connect(host)
    except NodeError as exc:
        return None, _check("connection", "fail", str(exc), True)
    times = []
    for _ in range(3):
        t = time.perf_counter()
        await node.run(["true"], timeout=30)
        times.append((time.perf_counter() - t) * 1000)
    rtt = statistics.median(times)
    where = f"{node.username}@{node.hostname} port {node.port}"
    return node, _check("connection", "ok", f"ssh {where}, round trip {rtt:.1f} ms", True, rtt_ms=round(rtt, 2))


async def diagnose(host: str, python: str = "python3", port: int = DEFAULT_PORT) -> list[dict]:
    """The checks for ``host`` (dicts as in ``--json``)."""
    node, conn = await _connection(host)
    checks = [conn]
    if node is None:
        return checks
    async with node:
        # python (and, through it, the run store, sglang and the port)
        probe = None
        try:
            res = await node.run([python, "-", str(port)], input=PYTHON_PROBE.encode(), timeout=120)
            if res.ok:
                probe = json.loads(res.out.strip().splitlines()[-1])
            else:
                why = "not found" if res.exit_status == 127 else (res.err.strip().splitlines() or ["failed"])[-1]
                checks.append(_check("python", "fail", f"{python}: {why}", True))
        except (ValueError, IndexError):
            checks.append(_check("python", "fail", f"{python}: unreadable output", True))
        if probe is not None:
            major_minor = tuple(int(x) for x in probe["version"].split(".")[:2])
            ok = major_minor >= (3, 8)
            checks.append(_check("python", "ok" if ok else "fail",
                                 f"{probe['executable']} {probe['version']}" + ("" if ok else " (needs >= 3.8)"),
                                 True, version=probe["version"], executable=probe["executable"]))
        res = await node.run(["tmux", "-V"], timeout=30)
        if res.ok:
            checks.append(_check("tmux", "ok", res.out.strip(), True, version=res.out.strip().split()[-1]))
        else:
            why = "not installed (apt install tmux)" if res.exit_status == 127 else res.err.strip()
            checks.append(_check("tmux", "fail", why, True))
        if probe is not None:
            if probe["home_ok"]:
                checks.append(_check("run store", "ok", f"{probe['home']} (writable)", True, path=probe["home"]))
            else:
                checks.append(_check("run store", "fail", f"not writable: {probe['home_error']}", True))
            if probe["sglang"]:
                checks.append(_check("sglang", "ok", f"{probe['sglang']} ({probe['sglang_path']})", True,
                                     version=probe["sglang"]))
            else:
                checks.append(_check("sglang", "fail", f"no sglang: {python} cannot import it "
                                     f"({probe['sglang_error']})", True, version=None))
        # GPUs, through the agent (pynvml from that python, else nvidia-smi)
        if probe is not None:
            try:
                hello, rec = await agent_once(node, python=python)
                if rec["type"] == "gpu" and rec["gpus"]:
                    gpus = rec["gpus"]
                    total = sum(g["memory_total_mib"] or 0 for g in gpus) / 1024
                    used = sum(g["memory_used_mib"] or 0 for g in gpus) / 1024
                    names = sorted({g["name"] for g in gpus})
                    sim = " SIMULATED" if rec.get("simulated") else ""
                    checks.append(_check("gpu", "ok", f"{len(gpus)} x {', '.join(names)}{sim} via {rec['source']}: "
                                         f"{used:.1f} / {total:.1f} GiB used", False, count=len(gpus),
                                         source=rec["source"], gpus=gpus))
                elif rec["type"] == "gpu":
                    checks.append(_check("gpu", "warn", f"no GPU: {rec['source']} lists none", False, count=0))
                else:
                    checks.append(_check("gpu", "warn", f"no GPU: {rec.get('reason') or rec.get('message')}",
                                         False, count=0))
            except NodeError as exc:
                checks.append(_check("gpu", "warn", f"GPU probe failed: {exc}", False, count=None))
            if probe["port"] == "free":
                checks.append(_check(f"port {port}", "ok", "free", False, state="free"))
            elif probe.get("health") == 200:
                checks.append(_check(f"port {port}", "ok", "serving (/health answers 200)", False, state="serving"))
            else:
                checks.append(_check(f"port {port}", "warn", "in use by a program that does not answer /health "
                                     f"({probe.get('health_error') or probe.get('health')})", False, state="in use"))
    return checks


def verdict(host: str, python: str, checks: list[dict]) -> tuple[bool, bool, str]:
    """(can_watch, can_launch, the verdict in words with the next step)."""
    failing = {c["name"] for c in checks if c["required"] and c["status"] == "fail"}
    can_watch = not failing - {"sglang"}
    can_launch = not failing
    warns = sum(c["status"] != "ok" and not c["required"] for c in checks)
    if can_launch:
        return True, True, (f"{host} can host a session" + (f" ({warns} warning{'s' if warns != 1 else ''})"
                                                              if warns else "") + ".")
    if not can_watch:
        return False, False, f"{host} cannot host a session yet."
    from mambaconsole.session.settings import config_path

    return True, False, (
        f"{host} can be watched (follow a server's log, adopt one started by hand, GPUs, runs) but cannot "
        f"launch, relaunch or resolve a server: {python} has no sglang.\n"
        f"next: find the python that has SGLang (its venv or conda env) and check it: "
        f"mambaconsole doctor {host} --python PATH; then use the same --python with the console, or set "
        f"python = \"PATH\" under [hosts.{host}] in {config_path()}")


async def _main(args) -> int:
    from mambaconsole.session.settings import load

    settings = load(args.host, {"python": args.python, "port": args.port})
    python, port = settings.python, settings.port
    checks = await diagnose(args.host, python, port)
    failing = [c for c in checks if c["required"] and c["status"] == "fail"]
    can_watch, can_launch, words = verdict(args.host, python, checks)
    if args.json:
        print(json.dumps({"host": args.host, "ok": can_launch, "can_watch": can_watch, "can_launch": can_launch,
                          "checks": checks}, indent=1))
    else:
        print(f"mambaconsole doctor {args.host}")
        for c in checks:
            mark = {"ok": "ok", "warn": "warn", "fail": "FAIL"}[c["status"]]
            print(f"  {mark:<5} {c['name']:<11} {c['detail']}")
        print(words)
    for c in failing:
        hint = f" (use --python PATH, or python in the settings for {args.host})" if c["name"] == "sglang" else ""
        print(f"mambaconsole: doctor: {c['name']}: {c['detail']}{hint}", file=sys.stderr)
    return 0 if can_launch else 1


def run(args: argparse.Namespace) -> int:
    try:
        return run_async(_main(args))
    except NodeError as exc:  # the connection dropped mid-way
        raise ConsoleError(str(exc)) from None
