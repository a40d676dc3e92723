"""The sim's pre-flight (``--sim-resolve``) answers like the real resolver on the real SGLang
0.5.11 / 0.5.23 for the seed scenario's commands that do not depend on a GPU: the same error
(type, message, file:line, step), the same usage error, and the same values, sources and
writers for the fields the scenario turns on."""

from __future__ import annotations

import asyncio

import pytest

from mambaconsole.sim.preflight import resolve_report

pytestmark = pytest.mark.sglang
venvs = pytest.importorskip("fixtures.sglang_venvs", reason="the SGLang test venv fixture is not here")

FIELDS = ["tokenizer_path", "served_model_name", "page_size", "disable_overlap_schedule", "disable_radix_cache",
          "speculative_algorithm", "speculative_num_steps", "speculative_eagle_topk", "speculative_num_draft_tokens",
          "max_running_requests", "max_mamba_cache_size", "mamba_full_memory_ratio", "mem_fraction_static"]


def seed(model: str, *extra: str) -> list[str]:
    # --device cpu: the real SGLang runs on this CPU-only machine
    return ["--model-path", model, "--device", "cpu", "--speculative-algorithm", "NEXTN",
            "--speculative-num-steps", "3", "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4",
            "--max-running-requests", "16", "--mem-fraction-static", "0.9", *extra]


def view(field: dict) -> dict:
    return {"value": field["value"], "source": field["source"], "given": field["given"], "option": field["option"],
            "writes": [(w["old"], w["new"], w["function"], w["file"], w["line"], w["declared_as"]) for w in field["writes"]]}


@pytest.mark.parametrize("version", ["0.5.11", "0.5.23"])
def test_sim_preflight_matches_the_real_resolver(version):
    from mambaconsole.node.local import LocalNode
    from mambaconsole.resolve import WarmResolver

    model = str(venvs.MODELS["qwen3.6-hybrid"])
    strategy = "--mamba-scheduler-strategy" if version == "0.5.11" else "--mamba-radix-cache-strategy"
    field = strategy[2:].replace("-", "_")
    argvs = [seed(model), seed(model, strategy, "no_buffer")]
    if version == "0.5.23":
        argvs += [seed(model, strategy, "no_buffer", "--disable-overlap-schedule"),
                  seed(model, "--mamba-scheduler-strategy", "no_buffer")]
    else:
        argvs += [seed(model, strategy, "no_buffer", "--disable-radix-cache")]

    async def real_answers():
        async with WarmResolver(LocalNode("local"), str(venvs.sglang_python(version)), env=venvs.sglang_env_extra()) as w:
            return [await w.resolve(argv) for argv in argvs]

    reals = asyncio.run(real_answers())
    for argv, real in zip(argvs, reals):
        sim = resolve_report(version, argv)
        assert (sim["ok"], sim["usage_error"], sim["error"]) == (real["ok"], real["usage_error"], real["error"]), argv
        if real["usage_error"]:
            continue
        for name in FIELDS + [field] + (["uses_mamba_radix_cache"] if version == "0.5.23" else []):
            assert view(sim["fields"][name]) == view(real["fields"][name]), (argv[-3:], name)
        want = [m["message"] for m in real["messages"] if m["message"].startswith("Max running requests is reset")]
        assert [m["message"] for m in sim["messages"] if m["message"].startswith("Max running requests")] == want
