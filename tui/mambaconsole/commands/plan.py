"""``mambaconsole plan``: predict a launch's GPU memory budget on the node before the model
loads: SGLang's own argument resolution (:mod:`mambaconsole.resolve`), the node's facts
(``config.json``, the weights' bytes from safetensors headers, GPU memory from NVML; read by
:mod:`mambaconsole.agent.node_facts`) and SGLang's sizing rules
(:mod:`mambaconsole.sglang.budget`). Exit status 0 when it fits, 1 when it does not."""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

from mambaconsole.units import count
from mambaconsole.errors import ConsoleError, UsageError
from mambaconsole.sglang import budget as B

HELP = ("predict a launch's GPU memory budget before the model loads: weights, Mamba pool, KV cache, "
        "graphs, the verdict and the largest Mamba caps that fit")

GIB = B.GIB


class PlanError(ConsoleError):
    """The plan cannot be made (no config, no GPU, resolution failed)."""


def make_plan(resolved: dict, facts: dict, *, gpu_memory_gib: float | None = None,
              gpu_name: str | None = None) -> dict:
    """:func:`mambaconsole.sglang.budget.plan_from_node`, its errors as :class:`PlanError`."""
    try:
        return B.plan_from_node(resolved, facts, gpu_memory_gib=gpu_memory_gib, gpu_name=gpu_name)
    except B.BudgetError as exc:
        raise PlanError(str(exc)) from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="local", help="ssh alias, user@host[:port], or 'local' (default)")
    parser.add_argument("--python", default="python3", help="the SGLang server's python on the node (default: python3)")
    add_planned_gpu_arguments(parser, "plan for a GPU of N GiB that is not there: SGLang resolves as on it (the "
                                        "node's GPU is not read); give --gpu-name or --gpu-capability too")
    parser.add_argument("--json", action="store_true", help="print the prediction as JSON (stable keys)")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="environment variable for SGLang on the node (repeatable), like a launch's env prefix")
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds (default 180)")
    parser.add_argument("sglang_args", nargs=argparse.REMAINDER,
                        help="-- then the SGLang server flags (e.g. -- --model-path M --tp-size 2)")


def add_planned_gpu_arguments(parser: argparse.ArgumentParser, memory_help: str) -> None:
    """``--gpu-memory-gib`` and its companions (``plan`` and ``resolve``); read by
    :func:`planned_device_of`."""
    parser.add_argument("--gpu-memory-gib", type=float, metavar="N", help=memory_help)
    parser.add_argument("--gpu-name", help="with --gpu-memory-gib: the planned GPU's name (its compute capability "
                                           "is known for common NVIDIA GPUs, e.g. H100, RTX PRO 6000 Blackwell)")
    parser.add_argument("--gpu-capability", metavar="X.Y", help="with --gpu-memory-gib: the planned GPU's compute "
                                                                  "capability (e.g. 9.0 for H100, 12.0 for RTX PRO 6000 Blackwell)")
    parser.add_argument("--gpu-count", type=int, default=1, metavar="N",
                        help="with --gpu-memory-gib: how many such GPUs the node has (default 1)")
    parser.add_argument("--cuda-version", default="12.8", metavar="X.Y",
                        help="with --gpu-memory-gib: the CUDA version of the node's torch (default 12.8)")


def run(args: argparse.Namespace) -> int:
    sglang_args = list(args.sglang_args)
    if sglang_args and sglang_args[0] == "--":
        sglang_args = sglang_args[1:]
    if not sglang_args:
        raise UsageError("give the SGLang flags after --, e.g. mambaconsole plan -- --model-path M")
    device = planned_device_of(args)
    from mambaconsole.commands._common import parse_env, python_hint
    from mambaconsole.resolve import ResolveError

    try:
        resolved, facts = asyncio.run(_fetch(args.host, args.python, sglang_args, parse_env(args.env) or None, args.timeout,
                                             device))
    except ResolveError as exc:
        raise python_hint(exc, args.python, args.host) from None
    out = make_plan(resolved, facts, gpu_memory_gib=args.gpu_memory_gib, gpu_name=device["name"] if device else None)
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        print(render(out))
    return 0 if out["fits"] else 1


#: compute capability of common NVIDIA data-centre and workstation GPUs (NVIDIA's "CUDA GPUs"
#: list), matched as a case-insensitive part of ``--gpu-name``; the longest match wins
GPU_CAPABILITY = {
    "V100": (7, 0), "T4": (7, 5), "A100": (8, 0), "A800": (8, 0), "A30": (8, 0), "A10": (8, 6), "A40": (8, 6),
    "RTX A6000": (8, 6), "RTX 3090": (8, 6), "L4": (8, 9), "L40": (8, 9), "L40S": (8, 9), "L20": (8, 9),
    "RTX 4090": (8, 9), "RTX 6000 Ada": (8, 9), "H100": (9, 0), "H800": (9, 0), "H200": (9, 0), "H20": (9, 0),
    "GH200": (9, 0), "B100": (10, 0), "B200": (10, 0), "GB200": (10, 0), "B300": (10, 3), "GB300": (10, 3),
    "RTX 5090": (12, 0), "RTX PRO 6000 Blackwell": (12, 0), "RTX PRO 6000": (12, 0), "GB10": (12, 1),
}


def gpu_capability(name: str) -> tuple[int, int] | None:
    """The compute capability :data:`GPU_CAPABILITY` knows for a GPU ``name``, or None."""
    import re

    words = name.upper()
    hits = [k for k in GPU_CAPABILITY if re.search(r"(?<![A-Z0-9])" + re.escape(k.upper()) + r"(?![A-Z0-9])", words)]
    return GPU_CAPABILITY[max(hits, key=len)] if hits else None


def planned_device_of(args: argparse.Namespace) -> dict | None:
    """The planned device of ``--gpu-memory-gib`` and its companions, or None (the node's own)."""
    from mambaconsole.resolve import planned_device

    if args.gpu_memory_gib is None:
        if args.gpu_name or args.gpu_capability:
            raise UsageError("--gpu-name and --gpu-capability describe a planned GPU: give --gpu-memory-gib N too")
        return None
    if args.gpu_memory_gib <= 0:
        raise UsageError(f"--gpu-memory-gib must be positive, got {args.gpu_memory_gib:g}")
    if args.gpu_count < 1:
        raise UsageError(f"--gpu-count must be at least 1, got {args.gpu_count}")
    cap = None
    if args.gpu_capability:
        try:
            major, minor = (int(x) for x in args.gpu_capability.split("."))
            cap = (major, minor)
        except ValueError:
            raise UsageError(f"--gpu-capability must be X.Y (e.g. 9.0), got {args.gpu_capability!r}") from None
    elif args.gpu_name:
        cap = gpu_capability(args.gpu_name)
        if cap is None:
            raise UsageError(f"the compute capability of {args.gpu_name!r} is not known here: give --gpu-capability X.Y")
    else:
        raise UsageError("--gpu-memory-gib needs the GPU's --gpu-name or --gpu-capability X.Y: SGLang's choices "
                         "depend on the GPU's generation")
    if not all(part.isdigit() for part in args.cuda_version.split(".")) or args.cuda_version.count(".") != 1:
        raise UsageError(f"--cuda-version must be X.Y (e.g. 12.8), got {args.cuda_version!r}")
    name = args.gpu_name or f"GPU of compute capability {cap[0]}.{cap[1]}"
    return planned_device(name, int(args.gpu_memory_gib * GIB), cap, count=args.gpu_count,
                          cuda_version=args.cuda_version)


async def _fetch(host: str, python: str, argv: list[str], env: dict | None, timeout: float,
                 device: dict | None = None) -> tuple[dict, dict]:

    from mambaconsole.node import connect
    from mambaconsole.resolve import resolve

    node = await connect(host)
    try:
        resolved = await resolve(node, argv, python=python, env=env, timeout=timeout, planned_device=device)
        if not resolved["ok"]:
            err = resolved.get("error") or resolved.get("usage_error") or {}
            raise PlanError(f"SGLang refuses these arguments: {err.get('type', '')}: {err.get('message', err)}"
                            " (mambaconsole resolve shows where)")
        model_path = resolved["fields"].get("model_path", {}).get("value") or ""
        facts = await node_facts(node, python, str(model_path), env, timeout)
        return resolved, facts
    finally:
        await node.close()


async def node_facts(node, python: str, model_path: str, env: dict | None = None, timeout: float = 60.0) -> dict:
    """Run :mod:`mambaconsole.agent.node_facts` with the node's ``python``; its JSON answer."""
    from mambaconsole.node.runs import agent_script
    from mambaconsole.node.base import NodeError

    try:
        res = await node.run([python, "-u", "-", model_path], input=agent_script("node_facts.py"), env=env,
                             timeout=timeout)
    except NodeError as exc:
        raise PlanError(f"reading the node's facts on {node.name}: {exc}") from None
    lines = [ln for ln in res.stdout.decode("utf-8", "replace").splitlines() if ln.strip()]
    try:
        return json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        tail = res.stderr.decode("utf-8", "replace").strip().splitlines()
        raise PlanError(f"node facts on {node.name} failed: {tail[-1] if tail else 'no output'}") from None


def render(p: dict[str, Any]) -> str:
    """The plan as a few readable lines."""
    bg = p["budget_gib"]
    lines = [
        f"SGLang {p['sglang_version']} (sizing rules of {p['rules']}) · {p['architecture']} · "
        + (f"planned for a {p['gpu_total_gib']:g} GiB {p['gpu_name']}, not measured" if p["gpu_planned"]
           else f"{p['gpu_name']}, {p['gpu_total_gib']:.1f} GiB"),
        f"weights    {bg['weights']:7.2f} GiB  ({p['weights_source']})",
        f"Mamba      {bg['mamba']:7.2f} GiB  ({p['max_mamba_cache_size']} slots)" if p["max_mamba_cache_size"] is not None
        else "Mamba         -       (not sized: the boot fails before the Mamba pool)" if p.get("hybrid")
        else "Mamba         -       (no linear-attention layers)",
        f"KV cache   {bg['kv_cache']:7.2f} GiB  ({p['kv_tokens']:,} tokens)",
        f"graphs     {bg['cuda_graph'][0]:.2f}-{bg['cuda_graph'][1]:.2f} GiB  (measured only at boot)",
        f"requests   {p['max_running_requests']}",
        ("predicted: " if p["fits"] else "predicted: ") + p["verdict"],
    ]
    lines += [f"note: {n}" for n in p["notes"]]
    if p["advice"]:
        # why change anything when it fits: the advice leaves SGLang's graph reserve free
        lines.append("each alone leaves SGLang's default reserve for CUDA graphs free:" if p["fits"] and p.get("risk")
                     else "each alone fits:" if not p["fits"] else "each alone also fits:")
    for a in p["advice"]:
        flags = " ".join(f"{k} {v}" for k, v in a["flags"].items())
        per = f" ({a['slots_per_request']} slots each)" if a["slots_per_request"] else ""
        lines.append(f"  {flags} fits, {count(a['max_running_requests'], 'request')}{per}")
    return "\n".join(lines)
