"""Pre-flight resolve over SSH: a fresh SGLang process per resolve (cold) vs a fork of the warm
resolver (warm), per SGLang version, end to end as the console sees it.

Starts its own OpenSSH sshd on 127.0.0.1 with throwaway keys (``tests/fixtures/sshd.py``) and
uses the CPU SGLang test venvs (``bash tests/sglang_venvs.sh``) with the config-only Qwen3-Next
folder in ``tests/models``. For each version, in the same run:

- cold (the baseline): ``mambaconsole.resolve.resolve`` over ``SSHNode``: ``python -u -`` with the
  resolver script, import of sglang, resolution, JSON back; COLD runs;
- warm: ``WarmResolver`` over the same ``SSHNode``: started once (import + warm-up, reported
  apart), then WARM resolves, each a fresh fork on the node, request and JSON over SSH.

Goal: every warm resolve <= 1 s and the median cold/warm ratio >= 20x for each version.
Last line: ``resolve: warm ssh worst s / min cold:warm ratio = W / R (goal <= 1 / >= 20) PASS|FAIL``.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tui"), str(ROOT / "tests")]

from fixtures.sglang_venvs import MODELS, sglang_env_extra, venv_root  # noqa: E402
from fixtures.sshd import ssh_session  # noqa: E402

from mambaconsole.node.ssh import SSHNode  # noqa: E402
from mambaconsole.resolve import WarmResolver, resolve  # noqa: E402

VERSIONS = ("0.5.11", "0.5.23")
COLD = 3
WARM = 8
GOAL_WARM_S = 1.0
GOAL_RATIO = 20.0


def argv_for(version: str) -> list[str]:
    argv = ["--model-path", str(MODELS["qwen3-next"]), "--device", "cpu"]
    return argv + (["--disable-overlap-schedule"] if version >= "0.5.14" else [])


async def bench_version(version: str) -> tuple[float, float]:
    python = str(venv_root() / f"sglang-{version}" / "bin" / "python")
    env = sglang_env_extra()
    argv = argv_for(version)
    node = SSHNode("gpu-node")
    await node.connect()
    try:
        cold = []
        for _ in range(COLD):
            t = time.perf_counter()
            r = await resolve(node, argv, python=python, env=env)
            cold.append(time.perf_counter() - t)
            assert r["ok"], r["error"]
        async with WarmResolver(node, python, env=env, warm_argv=argv) as warm:
            t = time.perf_counter()
            info = await warm.start()
            start_s = time.perf_counter() - t
            times = []
            for _ in range(WARM):
                t = time.perf_counter()
                r = await warm.resolve(argv)
                times.append(time.perf_counter() - t)
                assert r["ok"], r["error"]
    finally:
        await node.close()
    ratio = statistics.median(cold) / statistics.median(times)
    print(f"sglang {version}: cold median {statistics.median(cold):.2f} s ({', '.join(f'{x:.2f}' for x in cold)}); "
          f"warm start {start_s:.2f} s (warm-up {info.get('warmup')}), warm median {statistics.median(times):.3f} s, "
          f"worst {max(times):.3f} s; cold/warm {ratio:.1f}x", flush=True)
    return max(times), ratio


def main() -> int:
    missing = [v for v in VERSIONS if not (venv_root() / f"sglang-{v}" / "bin" / "python").exists()]
    if missing:
        print(f"bench/resolve.py: SGLang test venvs missing ({', '.join(missing)}): run bash tests/sglang_venvs.sh",
              file=sys.stderr)
        print("resolve: warm ssh worst s / min cold:warm ratio = n/a (goal <= 1 / >= 20) FAIL")
        return 1
    with ssh_session() as home:
        os.environ["HOME"] = str(home.home)
        os.environ.pop("SSH_AUTH_SOCK", None)
        results = [asyncio.run(bench_version(v)) for v in VERSIONS]
    worst = max(w for w, _ in results)
    ratio = min(r for _, r in results)
    ok = worst <= GOAL_WARM_S and ratio >= GOAL_RATIO
    print(f"resolve: warm ssh worst s / min cold:warm ratio = {worst:.3f} / {ratio:.1f} "
          f"(goal <= {GOAL_WARM_S:g} / >= {GOAL_RATIO:g}) {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
