"""The resolver against the real SGLang 0.5.11 and 0.5.23 (CPU-only, ``--device cpu``).

Slow tests (marked ``sglang``): a fresh SGLang process takes 5-9 s here, so the scenario tests
share one warm resolver per version (session scope); the warm answers are compared with fresh
processes in ``test_warm_equals_fresh``. Expected messages are the ones measured on real SGLang
(../shared/reference/resolver-notes.md §2 and issue 4); file:line answers are checked against
the installed SGLang source files themselves.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from fixtures.sglang_venvs import MODELS, sglang_env_extra, sglang_python
from mambaconsole.node.local import LocalNode
from mambaconsole.resolve import WarmResolver, check_result, resolve

pytestmark = [pytest.mark.sglang, pytest.mark.timeout(600)]

QNEXT = str(MODELS["qwen3-next"])
Q36 = str(MODELS["qwen3.6-hybrid"])
CPU = ["--device", "cpu"]


class SyncWarm:
    """A WarmResolver on its own event loop thread, so tests of any loop scope can share it."""

    def __init__(self, python: Path):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.node = LocalNode()
        self.warm = WarmResolver(self.node, str(python), env=sglang_env_extra())
        self.python = python

    def call(self, coro):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(300)

    def resolve(self, argv, env=None):
        return self.call(self.warm.resolve(argv, env=env))

    def params(self):
        return self.call(self.warm.params())

    def close(self):
        self.call(self.warm.close())
        self.call(self.node.close())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@pytest.fixture(scope="session")
def warm_for():
    made: dict[str, SyncWarm] = {}

    def get(version: str) -> SyncWarm:
        if version not in made:
            made[version] = SyncWarm(sglang_python(version))
        return made[version]

    yield get
    for w in made.values():
        w.close()


def fresh(version: str, argv, env=None) -> dict:
    async def go():
        async with LocalNode() as node:
            return await resolve(node, argv, python=str(sglang_python(version)),
                                 env={**sglang_env_extra(), **(env or {})})

    return asyncio.run(go())


def site_packages(version: str) -> Path:
    return next(sglang_python(version).parent.parent.glob("lib/python3*/site-packages"))


def source_line(version: str, rel: str, line: int) -> str:
    return (site_packages(version) / rel).read_text().splitlines()[line - 1]


def enclosing_def(version: str, rel: str, line: int) -> str:
    """The name of the innermost ``def`` at or above ``line`` in the installed file."""
    lines = (site_packages(version) / rel).read_text().splitlines()[:line]
    for text in reversed(lines):
        s = text.strip()
        if s.startswith("def "):
            return s[4:].split("(")[0]
    raise AssertionError(f"no def above {rel}:{line}")


def check_write_location(version: str, w: dict) -> None:
    """The write's function/file:line agree with the real SGLang source file."""
    assert w["file"].startswith("sglang/"), w
    assert enclosing_def(version, w["file"], w["line"]) == w["function"], w


def message(result, needle):
    hits = [m for m in result["messages"] if needle in m["message"]]
    assert hits, [m["message"] for m in result["messages"]]
    return hits[0]


# --------------------------------------------------------------------------- 0.5.11


def test_0511_default_strategy_is_derived_no_buffer(warm_for):
    r = warm_for("0.5.11").resolve(["--model-path", QNEXT, *CPU])
    assert r["ok"] and r["sglang_version"] == "0.5.11"
    f = r["fields"]["mamba_scheduler_strategy"]
    assert (f["value"], f["source"], f["default"], f["given"], f["option"]) == \
        ("no_buffer", "derived", "auto", None, "--mamba-scheduler-strategy")
    [w] = f["writes"]
    assert (w["old"], w["new"], w["function"], w["file"]) == \
        ("auto", "no_buffer", "_handle_missing_default_values", "sglang/srt/server_args.py")
    check_write_location("0.5.11", w)
    assert "no_buffer" in source_line("0.5.11", w["file"], w["line"])
    d = r["fields"]["disable_overlap_schedule"]
    assert (d["value"], d["source"]) == (True, "derived")
    assert d["writes"][-1]["function"] == "_handle_mamba_radix_cache"
    m = message(r, "Disabling overlap schedule since mamba no_buffer is not compatible with overlap schedule")
    assert m["level"] == "WARNING" and m["file"] == "sglang/srt/server_args.py"


def test_0511_explicit_auto_is_derived_not_overridden(warm_for):
    r = warm_for("0.5.11").resolve(["--model-path", QNEXT, *CPU, "--mamba-scheduler-strategy", "auto"])
    f = r["fields"]["mamba_scheduler_strategy"]
    assert (f["value"], f["source"], f["given"]) == ("no_buffer", "derived", "auto")


def test_0511_page_size_16_is_overridden_with_reason(warm_for):
    from mambaconsole.commands.resolve import reason_for

    r = warm_for("0.5.11").resolve(["--model-path", QNEXT, *CPU, "--page-size", "16"])
    f = r["fields"]["page_size"]
    assert (f["value"], f["given"], f["source"]) == (1, 16, "overridden")
    w = f["writes"][-1]
    assert (w["old"], w["new"], w["function"]) == (16, 1, "_handle_mamba_radix_cache")
    check_write_location("0.5.11", w)
    assert source_line("0.5.11", w["file"], w["line"]).strip() == "self.page_size = 1"
    why = reason_for(r, w)
    assert why is not None and "Automatically setting page_size=1" in why["message"]


def test_0511_eagle_error_shows_strategy_already_no_buffer(warm_for):
    r = warm_for("0.5.11").resolve(["--model-path", QNEXT, *CPU, "--speculative-algorithm", "EAGLE",
                                    "--speculative-num-steps", "3", "--speculative-eagle-topk", "1",
                                    "--speculative-num-draft-tokens", "4"])
    assert r["ok"] is False and r["usage_error"] is None
    e = r["error"]
    assert e["type"] == "ValueError"
    assert e["message"] == (
        "Speculative decoding for Qwen3NextForCausalLM is not compatible with radix cache when using "
        "--mamba-scheduler-strategy no_buffer.To use radix cache with speculative decoding, please use "
        "--mamba-scheduler-strategy extra_buffer and set SGLANG_ENABLE_SPEC_V2=1.")
    assert (e["function"], e["file"]) == ("_handle_mamba_radix_cache", "sglang/srt/server_args.py")
    assert "raise ValueError" in source_line("0.5.11", e["file"], e["line"]) or \
        "ValueError" in "\n".join((site_packages("0.5.11") / e["file"]).read_text().splitlines()[e["line"] - 3:e["line"]])
    assert (e["sglang_file"], e["sglang_line"]) == (e["file"], e["line"])
    assert e["step"] == "_handle_model_specific_adjustments"
    # the partial state answers the puzzle: the strategy was already no_buffer
    f = r["fields"]["mamba_scheduler_strategy"]
    assert (f["value"], f["source"]) == ("no_buffer", "derived")
    assert r["fields"]["speculative_algorithm"]["source"] == "cli"


def test_0511_extra_buffer_on_cpu_is_assertion_error(warm_for):
    r = warm_for("0.5.11").resolve(["--model-path", QNEXT, *CPU, "--mamba-scheduler-strategy", "extra_buffer"])
    e = r["error"]
    assert e["type"] == "AssertionError"
    assert e["message"] == "Mamba extra_buffer is only supported on CUDA and MUSA devices with FLA backend"
    assert e["function"] == "_handle_mamba_radix_cache"
    assert r["fields"]["mamba_scheduler_strategy"]["source"] == "cli"


def test_0511_env_driven_default(warm_for):
    r = warm_for("0.5.11").resolve(["--model-path", QNEXT, *CPU],
                                   env={"SGLANG_PREFILL_DELAYER_MAX_DELAY_PASSES": "7"})
    f = r["fields"]["prefill_delayer_max_delay_passes"]
    assert (f["value"], f["source"], f["given"]) == (7, "env", None)
    assert f["writes"][-1]["function"] == "_handle_prefill_delayer_env_compat"
    plain = warm_for("0.5.11").resolve(["--model-path", QNEXT, *CPU])
    assert plain["fields"]["prefill_delayer_max_delay_passes"]["source"] == "default"


def test_0511_config_yaml_and_cli_override(warm_for, tmp_path):
    cfg = tmp_path / "serve.yaml"
    cfg.write_text("chunked-prefill-size: 1024\nmax-running-requests: 48\n")
    w = warm_for("0.5.11")
    r = w.resolve(["--model-path", QNEXT, *CPU, "--config", str(cfg), "--chunked-prefill-size", "512"])
    assert r["ok"], r["error"]
    assert {k: r["fields"]["chunked_prefill_size"][k] for k in ("value", "source", "given")} == \
        {"value": 512, "source": "cli", "given": 512}
    assert {k: r["fields"]["max_running_requests"][k] for k in ("value", "source", "given")} == \
        {"value": 48, "source": "config", "given": 48}
    # `--config=x.yaml` is silently ignored by SGLang: said, and the YAML value is absent
    r2 = w.resolve(["--model-path", QNEXT, *CPU, f"--config={cfg}"])
    assert r2["fields"]["max_running_requests"]["source"] == "default"
    assert message(r2, "silently ignored")["logger"] == "mambaconsole.resolver"
    # underscore keys: argparse rejects what SGLang's merger emits; the quirk is named
    bad = tmp_path / "bad.yaml"
    bad.write_text("disable_radix_cache: true\nchunked_prefill_size: 1024\n")
    r3 = w.resolve(["--model-path", QNEXT, *CPU, "--config", str(bad)])
    assert r3["usage_error"]["message"] == \
        "sglang serve: error: unrecognized arguments: --disable_radix_cache --chunked_prefill_size 1024"
    assert "--disable-radix-cache" in r3["usage_error"]["suggestions"]["--disable_radix_cache"]
    assert "underscores" in message(r3, "disable_radix_cache")["message"]


def test_0511_explicit_detection_aliases_abbreviations_no_flags(warm_for):
    r = warm_for("0.5.11").resolve(["--model", QNEXT, *CPU, "--chunked-prefill", "512", "--tp-size", "1"])
    assert r["fields"]["model_path"]["source"] == "cli"
    assert r["fields"]["chunked_prefill_size"]["source"] == "cli"
    tp = r["fields"]["tp_size"]  # dest tensor_parallel_size -> field tp_size in 0.5.11
    assert (tp["value"], tp["source"], tp["given"]) == (1, "cli", 1)


def test_0511_new_flag_name_is_usage_error_naming_the_old_one(warm_for):
    r = warm_for("0.5.11").resolve(["--model-path", QNEXT, *CPU, "--mamba-radix-cache-strategy", "no_buffer"])
    assert r["usage_error"]["unknown_flags"] == ["--mamba-radix-cache-strategy"]
    assert r["usage_error"]["suggestions"]["--mamba-radix-cache-strategy"] == \
        "unknown in SGLang 0.5.11; it is the 0.5.14+ name of `--mamba-scheduler-strategy`, use that here"


def test_0511_a_later_release_name_is_named_by_the_flag_table(warm_for):
    """--cuda-graph-max-bs-decode is the 0.5.14+ name (the issue: 0.5.23 rejects --cuda-graph-max-bs);
    0.5.11's parser knows only the old name. The sentence comes from the console's flag table."""
    r = warm_for("0.5.11").resolve(["--model-path", QNEXT, *CPU, "--cuda-graph-max-bs-decode", "8"])
    assert r["usage_error"]["unknown_flags"] == ["--cuda-graph-max-bs-decode"]
    assert r["usage_error"]["suggestions"]["--cuda-graph-max-bs-decode"] == \
        "unknown in SGLang 0.5.11; it is the 0.5.14+ name of `--cuda-graph-max-bs`, use that here"


# --------------------------------------------------------------------------- 0.5.23


def test_0523_old_flag_is_usage_error_with_rename(warm_for):
    r = warm_for("0.5.23").resolve(["--model-path", QNEXT, *CPU, "--mamba-scheduler-strategy", "extra_buffer"])
    assert r["ok"] is False and r["error"] is None and r["fields"] == {}
    assert r["usage_error"] == {
        "message": "sglang serve: error: unrecognized arguments: --mamba-scheduler-strategy extra_buffer",
        "unknown_flags": ["--mamba-scheduler-strategy"],
        "suggestions": {"--mamba-scheduler-strategy":
                        "unknown in SGLang 0.5.23; renamed `--mamba-radix-cache-strategy` in 0.5.14"},
    }

def test_0523_every_rename_the_releases_name_not_only_the_mamba_one(warm_for):
    """0.5.23 rejects --stream-output and --cuda-graph-max-bs (issue 12 item 4): the answer names
    the flag to use and the release that renamed it, as for the Mamba strategy flag. 0.5.23's
    argparse calls --cuda-graph-max-bs ambiguous (the start of its -decode and -prefill heirs)."""
    r = warm_for("0.5.23").resolve(["--model-path", QNEXT, *CPU, "--stream-output"])
    assert r["usage_error"]["unknown_flags"] == ["--stream-output"]
    assert r["usage_error"]["suggestions"] == {
        "--stream-output": "unknown in SGLang 0.5.23; renamed `--incremental-streaming-output` in 0.5.10"}
    r = warm_for("0.5.23").resolve(["--model-path", QNEXT, *CPU, "--cuda-graph-max-bs", "8"])
    ue = r["usage_error"]
    assert ue["message"].startswith("sglang serve: error: ambiguous option: --cuda-graph-max-bs could match ")
    assert ue["suggestions"] == {"--cuda-graph-max-bs": "not an option of SGLang 0.5.23, only the start of "
                                                        "others; renamed `--cuda-graph-max-bs-decode` in 0.5.14"}



def test_0523_auto_with_disable_overlap_declares_no_buffer(warm_for):
    r = warm_for("0.5.23").resolve(["--model-path", QNEXT, *CPU, "--mamba-radix-cache-strategy", "auto",
                                    "--disable-overlap-schedule"])
    assert r["ok"], r["error"]
    f = r["fields"]["mamba_radix_cache_strategy"]
    assert (f["value"], f["source"], f["given"]) == ("no_buffer", "derived", "auto")
    w = f["writes"][-1]
    assert (w["old"], w["new"], w["declared_as"]) == ("auto", "no_buffer", "_mamba_radix_cache_resolution")
    assert w["file"] == "sglang/srt/arg_groups/overrides.py"
    assert source_line("0.5.23", w["file"], w["line"]).startswith("def _mamba_radix_cache_resolution(")
    assert r["fields"]["uses_mamba_radix_cache"]["value"] is True
    assert r["fields"]["disable_overlap_schedule"]["source"] == "cli"


def test_0523_default_launch_resolves_extra_buffer_then_fails(warm_for):
    r = warm_for("0.5.23").resolve(["--model-path", QNEXT, *CPU])
    e = r["error"]
    assert (e["type"], e["message"]) == ("AssertionError", "extra_buffer requires platform support for Mamba cache state snapshots.")
    assert (e["function"], e["file"]) == ("validate_mamba_extra_buffer", "sglang/srt/arg_groups/mamba_hook.py")
    assert "assert" in source_line("0.5.23", e["file"], e["line"])
    assert e["step"] == "handle_model_specific_adjustments"
    f = r["fields"]["mamba_radix_cache_strategy"]
    assert (f["value"], f["source"]) == ("extra_buffer", "derived")
    assert f["writes"][-1]["declared_as"] == "_mamba_radix_cache_resolution"


def test_0523_qwen36_hybrid_same_answer(warm_for):
    r = warm_for("0.5.23").resolve(["--model-path", Q36, *CPU])
    assert r["error"]["message"] == "extra_buffer requires platform support for Mamba cache state snapshots."
    assert r["fields"]["mamba_radix_cache_strategy"]["value"] == "extra_buffer"


def test_params_metadata(warm_for):
    rows = {tuple(p["option_strings"]): p for p in warm_for("0.5.11").params()["params"]}
    p = rows[("--mamba-scheduler-strategy",)]
    assert (p["dest"], p["default"], p["choices"], p["type"]) == \
        ("mamba_scheduler_strategy", "auto", ["auto", "no_buffer", "extra_buffer"], "str")
    assert rows[("--tensor-parallel-size", "--tp-size")]["field"] == "tp_size"
    rows23 = {p["dest"]: p for p in warm_for("0.5.23").params()["params"]}
    assert rows23["tp_size"]["option_strings"] == ["--tp-size", "--tensor-parallel-size"]
    assert "mamba_scheduler_strategy" not in rows23
    assert rows23["mamba_radix_cache_strategy"]["choices"] == ["auto", "no_buffer", "extra_buffer", "extra_buffer_lazy"]


# --------------------------------------------------------------------------- warm == fresh


def comparable(r: dict) -> dict:
    r = json.loads(json.dumps(r))
    r.pop("elapsed_s")
    r["fields"].pop("random_seed", None)  # random on every resolve
    # computed from the machine's memory as read at that moment (0.5.11 get_cpu_memory_capacity:
    # lscpu NUMA MemTotal, else psutil total; they differ by GBs on this VM): it differed once
    # between two processes during a loaded full-suite run, so it is compared for type only
    msf = r["fields"].pop("mem_fraction_static", None)
    assert msf is None or isinstance(msf["value"], float)
    return r


def assert_same(a: dict, b: dict, what) -> None:
    a, b = comparable(a), comparable(b)
    diff = {n: (a["fields"].get(n), b["fields"].get(n)) for n in set(a["fields"]) | set(b["fields"])
            if a["fields"].get(n) != b["fields"].get(n)}
    assert not diff, (what, diff)
    assert a == b, what


@pytest.mark.parametrize("version", ["0.5.11", "0.5.23"])
def test_warm_equals_fresh(warm_for, tmp_path, version):
    model = tmp_path / "model"
    shutil.copytree(QNEXT, model)
    cfg_path = model / "config.json"
    # 0.5.11 decides overlap scheduling from the architecture; 0.5.23 the strategy
    probe = ["--model-path", str(model), *CPU] + (["--disable-overlap-schedule"] if version == "0.5.23" else [])
    seq = [
        ["--model-path", str(model), *CPU, "--mamba-ssm-dtype", "float16"],
        ["--model-path", str(model), *CPU, "--disable-overlap-schedule", "--page-size", "16"],
        probe,
        "edit",  # the model's config.json becomes a plain Qwen2 between two resolves
        probe,
    ]
    if version == "0.5.11":
        seq.insert(1, ["--model-path", str(model), *CPU, "--speculative-algorithm", "EAGLE"])
    w = warm_for(version)
    answers = []
    for argv in seq:
        if argv == "edit":
            cfg = json.loads(cfg_path.read_text())
            cfg.update(architectures=["Qwen2ForCausalLM"], model_type="qwen2")
            cfg_path.write_text(json.dumps(cfg))
            continue
        warm_answer = w.resolve(argv)
        fresh_answer = fresh(version, argv)
        assert_same(warm_answer, fresh_answer, argv)
        answers.append(warm_answer)
    # the edit was seen (no stale model config): the hybrid-only decisions are gone
    before, after = answers[-2]["fields"], answers[-1]["fields"]
    if version == "0.5.11":
        assert (before["disable_overlap_schedule"]["value"], before["disable_overlap_schedule"]["source"]) == (True, "derived")
        assert (after["disable_overlap_schedule"]["value"], after["disable_overlap_schedule"]["source"]) == (False, "default")
    else:
        assert before["mamba_radix_cache_strategy"]["value"] == "no_buffer"
        assert (after["mamba_radix_cache_strategy"]["value"], after["uses_mamba_radix_cache"]["value"]) == ("auto", False)


def test_warm_restores_environment(warm_for):
    """A variable one resolution's request sets does not reach the next one."""
    w = warm_for("0.5.11")
    a = w.resolve(["--model-path", QNEXT, *CPU], env={"SGLANG_PREFILL_DELAYER_MAX_DELAY_PASSES": "9"})
    b = w.resolve(["--model-path", QNEXT, *CPU])
    assert a["fields"]["prefill_delayer_max_delay_passes"]["value"] == 9
    assert b["fields"]["prefill_delayer_max_delay_passes"]["source"] == "default"


# --------------------------------------------------------------------------- the command


def cli(*args, env=None, timeout=300):
    import os

    return subprocess.run([sys.executable, "-m", "mambaconsole", "resolve", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=timeout)


def test_cli_json_and_table():
    py = str(sglang_python("0.5.23"))
    argv = ["--model-path", QNEXT, *CPU, "--mamba-radix-cache-strategy", "no_buffer", "--page-size", "1"]
    env_args = [a for k, v in sglang_env_extra().items() for a in ("--env", f"{k}={v}")]
    p = cli("--python", py, "--json", *env_args, "--", *argv)
    assert p.returncode == 0, p.stderr
    r = check_result(json.loads(p.stdout))
    assert r["fields"]["mamba_radix_cache_strategy"]["source"] == "cli"
    assert r["error"]["message"] == "no_buffer do not support overlap schedule. Try to set disable_overlap_schedule=True."
    t = cli("--python", py, *env_args, "--", *argv, env={"COLUMNS": "200"})
    assert t.returncode == 1  # SGLang rejected the launch
    assert "AssertionError: no_buffer do not support overlap schedule" in t.stdout
    lines = t.stdout.splitlines()
    # changed fields come first, before the ones the user gave
    first_derived = next(i for i, ln in enumerate(lines) if " derived " in ln)
    first_cli = next(i for i, ln in enumerate(lines) if " cli " in ln)
    assert first_derived < first_cli
    # at 120 and 80 columns every writer's file:line (read off the JSON) is whole on one line,
    # and no line is wider than the terminal: a table at 120, a list under it
    # (SGLang's private fields, ``_name``, are listed only with --all)
    wheres = {f"{w['file'].removeprefix('sglang/srt/')}:{w['line']}" for name, f in r["fields"].items()
              if f["source"] != "default" and not name.startswith("_") for w in f["writes"] if w["old"] != w["new"]}
    assert wheres
    for width in (120, 80):
        t = cli("--python", py, *env_args, "--", *argv, env={"COLUMNS": str(width)})
        lines = t.stdout.splitlines()
        assert max(map(len, lines)) <= width
        assert {w for w in wheres if not any(w in ln for ln in lines)} == set(), width


def test_cli_one_line_errors(tmp_path):
    p = cli("--python", sys.executable, "--", "--model-path", QNEXT)
    assert p.returncode == 1 and p.stdout == ""
    assert p.stderr.count("\n") == 1 and p.stderr.startswith(
        "mambaconsole: error: cannot import sglang: ModuleNotFoundError: No module named 'sglang'")
    assert f"with {sys.executable} on " in p.stderr and "--python PATH" in p.stderr  # what to do about it
    liar = tmp_path / "python"
    liar.write_text("#!/bin/sh\ncat >/dev/null\necho 'this is not json'\n")
    liar.chmod(0o755)
    p = cli("--python", str(liar), "--", "--model-path", QNEXT)
    assert p.returncode == 1 and len(p.stderr.strip().splitlines()) == 1
    assert "not JSON" in p.stderr
    crash = tmp_path / "crash"
    crash.write_text("#!/bin/sh\ncat >/dev/null\necho 'Segmentation fault' >&2\nexit 139\n")
    crash.chmod(0o755)
    p = cli("--python", str(crash), "--", "--model-path", QNEXT)
    assert p.returncode == 1 and "exit status 139" in p.stderr and len(p.stderr.strip().splitlines()) == 1


@pytest.mark.sshd
def test_over_ssh_same_json_as_local(ssh_home):
    py = str(sglang_python("0.5.23"))
    argv = ["--model-path", QNEXT, *CPU, "--mamba-radix-cache-strategy", "auto", "--disable-overlap-schedule"]
    env_args = [a for k, v in sglang_env_extra().items() for a in ("--env", f"{k}={v}")]
    remote = cli("--host", "gpu-node", "--python", py, "--json", *env_args, "--", *argv)
    assert remote.returncode == 0, remote.stderr
    local = cli("--python", py, "--json", *env_args, "--", *argv)
    assert local.returncode == 0, local.stderr
    assert comparable(json.loads(remote.stdout)) == comparable(json.loads(local.stdout))

    async def warm_over_ssh():
        from mambaconsole.node.ssh import SSHNode

        node = SSHNode("gpu-node")
        try:
            async with WarmResolver(node, py, env=sglang_env_extra()) as warm:
                first = await warm.resolve(argv)
                assert warm.alive and warm.info["event"] == "ready"
                return first, await warm.resolve(argv)
        finally:
            await node.close()

    first, second = asyncio.run(warm_over_ssh())
    assert_same(first, json.loads(local.stdout), "warm over ssh")
    assert_same(second, json.loads(local.stdout), "warm over ssh, forked")
