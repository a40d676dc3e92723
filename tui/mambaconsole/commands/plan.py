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
    parser.add_argument("--gpu-memory-gib", type=float, metavar="N",
                        help="plan for a GPU of N GiB that is not there (the node's GPU is not read)")
    parser.add_argument("--gpu-name", help="with --gpu-memory-gib: the planned GPU's name, shown only")
    parser.add_argument("--json", action="store_true", help="print the prediction as JSON (stable keys)")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="environment variable for SGLang on the node (repeatable), like a launch's env prefix")
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds (default 180)")
    parser.add_argument("sglang_args", nargs=argparse.REMAINDER,
                        help="-- then the SGLang server flags (e.g. -- --model-path M --tp-size 2)")


def run(args: argparse.Namespace) -> int:
    sglang_args = list(args.sglang_args)
    if sglang_args and sglang_args[0] == "--":
        sglang_args = sglang_args[1:]
    if not sglang_args:
        raise UsageError("give the SGLang flags after --, e.g. mambaconsole plan -- --model-path M")
    if args.gpu_memory_gib is not None and args.gpu_memory_gib <= 0:
        raise UsageError(f"--gpu-memory-gib must be positive, got {args.gpu_memory_gib:g}")
    from mambaconsole.commands.resolve import _env

    from mambaconsole.commands.resolve import python_hint
    from mambaconsole.resolve import ResolveError

    try:
        resolved, facts = asyncio.run(_fetch(args.host, args.python, sglang_args, _env(args.env), args.timeout))
    except ResolveError as exc:
        raise python_hint(exc, args.python, args.host) from None
    out = make_plan(resolved, facts, gpu_memory_gib=args.gpu_memory_gib, gpu_name=args.gpu_name)
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        print(render(out))
    return 0 if out["fits"] else 1


async def _fetch(host: str, python: str, argv: list[str], env: dict | None, timeout: float) -> tuple[dict, dict]:

    from mambaconsole.node import connect
    from mambaconsole.resolve import resolve

    node = await connect(host)
    try:
        resolved = await resolve(node, argv, python=python, env=env, timeout=timeout)
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
        f"{p['gpu_name']}, {p['gpu_total_gib']:.1f} GiB" + (" (planned, not on the node)" if p["gpu_planned"] else ""),
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
    for a in p["advice"]:
        flags = " ".join(f"{k} {v}" for k, v in a["flags"].items())
        per = f" ({a['slots_per_request']} slots each)" if a["slots_per_request"] else ""
        lines.append(f"  {flags} fits, {a['max_running_requests']} requests{per}")
    return "\n".join(lines)
