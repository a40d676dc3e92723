"""Memory pre-flight over SSH (issue 18): a warm prediction, vs the boot it saves.

Starts its own OpenSSH sshd on 127.0.0.1 with throwaway keys (``tests/fixtures/sshd.py``), uses
the CPU SGLang 0.5.23 test venv (``bash tests/sglang_venvs.sh``) and the Qwen3.6-27B
``config.json`` in ``tests/models/qwen3.6-hybrid`` (no weights there: the weights are estimated
from the config; with weights the headers are read once, then cached like the config).

- warm prediction (what the editor does on ctrl+r after the first one): ``WarmResolver.resolve``
  over ``SSHNode`` (a fork of the warm resolver on the node, asked over a UNIX-socket channel of
  the SSH connection: no process is started on the node per request), the node facts from the session's
  cache, ``budget.plan_from_node`` with advice; PLANS times, all on the seed scenario's first
  argv (``extra_buffer`` with the default caps), SGLang resolving as on a 96 GiB RTX PRO 6000
  Blackwell (the planned device of ``plan --gpu-memory-gib``);
- the first prediction of a session (resolver start + the node-facts script over SSH), apart;
- what it saves (the baseline, same run): a real SGLang 0.5.23 server (the server test venv of
  ``tests/fixtures/real_sglang.py``, tiny hybrid model, dummy weights, CPU) from launch to its
  memory sizing line, the least a failed try costs anywhere; and, for scale, the weight loading
  the shared cases logged ("Load weight end. elapsed=...": 653-2455 s on large models).

Goal: every warm prediction <= 1 s. Last line:
``plan: warm ssh worst s = W, boot / prediction = R (goal <= 1 s) PASS|FAIL``: R is the real
boot to its memory sizing over the worst warm prediction (the least a failed try costs; the
shared cases' weight loading alone is 653-2455 s, said on the line before).
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tui"), str(ROOT / "tests")]

from fixtures.sglang_venvs import MODELS, sglang_env_extra, venv_root  # noqa: E402
from fixtures.sshd import ssh_session  # noqa: E402

from mambaconsole.node.ssh import SSHNode  # noqa: E402
from mambaconsole.resolve import WarmResolver, planned_device  # noqa: E402
from mambaconsole.sglang import budget  # noqa: E402

PLANS = 8
GOAL_S = 1.0
VERSION = "0.5.23"
#: the seed scenario's first launch (extra_buffer, default caps), planned for its GPU
ARGV = ["--model-path", str(MODELS["qwen3.6-hybrid"]), "--mem-fraction-static", "0.9",
        "--speculative-algorithm", "NEXTN", "--speculative-num-steps", "3", "--speculative-eagle-topk", "1",
        "--speculative-num-draft-tokens", "4", "--max-running-requests", "16",
        "--mamba-radix-cache-strategy", "extra_buffer"]
GPU_NAME, GPU_GIB = "RTX PRO 6000 Blackwell", 96
DEVICE = planned_device(GPU_NAME, GPU_GIB << 30, (12, 0))


async def node_facts(node, python: str, model: str, env: dict) -> dict:
    from mambaconsole.commands.plan import node_facts as read

    return await read(node, python, model, env, 60)


async def predictions(python: str) -> tuple[float, list[float], dict]:
    env = sglang_env_extra()
    node = SSHNode("gpu-node")
    await node.connect()
    try:
        async with WarmResolver(node, python, env=env, warm_argv=ARGV, planned_device=DEVICE) as warm:
            t = time.perf_counter()
            await warm.start()
            res = await warm.resolve(ARGV)
            facts = await node_facts(node, python, ARGV[1], env)
            plan = budget.plan_from_node(res, facts, gpu_memory_gib=GPU_GIB, gpu_name=GPU_NAME)
            first = time.perf_counter() - t
            times, model_s = [], []
            for _ in range(PLANS):
                t = time.perf_counter()
                res = await warm.resolve(ARGV)
                t1 = time.perf_counter()
                plan = budget.plan_from_node(res, facts, gpu_memory_gib=GPU_GIB, gpu_name=GPU_NAME)
                times.append(time.perf_counter() - t)
                model_s.append(time.perf_counter() - t1)
    finally:
        await node.close()
    print(f"of which the budget model and its advice: worst {max(model_s) * 1000:.1f} ms (the rest is the warm resolve)")
    return first, times, plan


def boot_to_sizing() -> float | None:
    """Seconds from launching a real SGLang 0.5.23 server (CPU, tiny hybrid) to its KV cache line."""
    py = venv_root() / f"sglang-server-{VERSION}" / "bin" / "python"
    if not py.exists():
        return None
    from fixtures.real_sglang import BASE_ARGS, STANDINS, STUB, free_port, prepare_model

    base = Path(tempfile.mkdtemp(prefix="mc-bench-plan-"))
    model = prepare_model("qwen3-next-tiny", base, py)
    env = dict(os.environ, PYTHONPATH=f"{STUB}:{STANDINS}", SGLANG_USE_CPU_ENGINE="1", HF_HUB_OFFLINE="1",
               TRANSFORMERS_OFFLINE="1", OMP_NUM_THREADS="1", MAMBACONSOLE_SGL_KERNEL_CPU="1")
    log = base / "server.log"
    t = time.perf_counter()
    with open(log, "wb") as out:
        proc = subprocess.Popen([str(py), "-m", "sglang.launch_server", "--model-path", str(model), *BASE_ARGS,
                                 "--mamba-radix-cache-strategy", "no_buffer", "--disable-overlap-schedule",
                                 "--max-mamba-cache-size", "32", "--port", str(free_port())],
                                stdout=out, stderr=subprocess.STDOUT, env=env, cwd=base, start_new_session=True)
    try:
        while time.perf_counter() - t < 600:
            if re.search(r"KV Cache is allocated", log.read_text(errors="replace")):
                return time.perf_counter() - t
            if proc.poll() is not None:
                return None
            time.sleep(0.2)
        return None
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the group this bench started
        except ProcessLookupError:
            pass
        proc.wait(timeout=60)


def main() -> int:
    python = venv_root() / f"sglang-{VERSION}" / "bin" / "python"
    if not python.exists():
        print(f"bench/plan.py: SGLang {VERSION} test venv missing: run bash tests/sglang_venvs.sh", file=sys.stderr)
        print(f"plan: warm ssh worst s = n/a, boot / prediction = n/a (goal <= {GOAL_S:g} s) FAIL")
        return 1
    with ssh_session() as home:
        os.environ["HOME"] = str(home.home)
        os.environ.pop("SSH_AUTH_SOCK", None)
        first, times, plan = asyncio.run(predictions(str(python)))
    worst = max(times)
    print(f"first prediction of a session (resolver start, node facts over SSH): {first:.2f} s")
    print(f"warm predictions over SSH: median {statistics.median(times):.3f} s, worst {worst:.3f} s "
          f"({', '.join(f'{x:.2f}' for x in times)})")
    print(f"  {budget.one_line(plan)}")
    boot = boot_to_sizing()
    if boot is not None:
        print(f"a real SGLang {VERSION} boot to its memory sizing (CPU, tiny model, dummy weights): {boot:.1f} s "
              f"= {boot / worst:.0f}x the worst warm prediction")
    else:
        print(f"a real SGLang {VERSION} boot: not measured (server venv missing or the server failed)")
    print("for scale, weight loading logged in the shared cases: 653 s (Qwen3.5 MoE, bank-2 case-211) and 2455 s (case-204) "
          f"= {653 / worst:.0f}x and {2455 / worst:.0f}x the worst warm prediction")
    load = os.getloadavg()[0]
    print(f"load average while measured: {load:.1f} on {os.cpu_count()} cores")
    ok = worst <= GOAL_S
    ratio = f"{boot / worst:.0f}x" if boot is not None else "n/a (boot not measured)"
    print(f"plan: warm ssh worst s = {worst:.3f}, boot / prediction = {ratio} (goal <= {GOAL_S:g} s) "
          f"{'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
