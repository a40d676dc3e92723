"""The flag table generated from SGLang's own parsers (scripts/gen_flag_table.py) and the
hints that name only flags the log's version accepts. Expected values are what the issue and
SGLang's release notes say: 0.5.23 rejects --cuda-graph-max-bs, --cuda-graph-bs, the
piecewise family, --stream-output, --enable-gdn-replayssm-spec; the Mamba strategy flag was
renamed in 0.5.14 and its old name removed by 0.5.20."""

from __future__ import annotations

import pytest

from mambaconsole.sglang import flags as F
from mambaconsole.sglang.flag_table import ACCEPTED, VERSIONS
from mambaconsole.sglang.inspect import inspect_text


def test_table_covers_the_releases():
    assert VERSIONS == [f"0.5.{n}" for n in range(9, 24)]
    assert all(len(ACCEPTED[v]) > 300 for v in VERSIONS)


@pytest.mark.parametrize("flag", ["--cuda-graph-max-bs", "--cuda-graph-bs", "--piecewise-cuda-graph-max-tokens",
                                  "--piecewise-cuda-graph-tokens", "--stream-output", "--enable-gdn-replayssm-spec",
                                  "--mamba-scheduler-strategy"])
def test_0523_rejects(flag):
    assert F.accepts(flag, "0.5.23") is False and F.status(flag, "0.5.23") == "removed"


def test_mamba_strategy_rename():
    old, new = "--mamba-scheduler-strategy", "--mamba-radix-cache-strategy"
    assert F.status(old, "0.5.11") == "accepted" and F.status(new, "0.5.11") == "never"
    assert F.status(old, "0.5.14") == "deprecated" and F.accepts(new, "0.5.14")
    assert F.replacement(old, "0.5.23") == new
    assert F.status("--max-mamba-cache-size=24", "0.5.13.post1") == "accepted"


def test_unknown_versions_are_not_guessed():
    assert F.accepts("--cuda-graph-max-bs", None) is None
    assert F.status("--cuda-graph-max-bs", "0.0.0.dev13403+ge16efa89c") == "unknown"
    assert F.usable(["--cuda-graph-max-bs"], "0.6.0") == ["--cuda-graph-max-bs"]


def _startup_oom(version_line: str) -> str:
    text = (f"{version_line}\n"
            "[2026-01-01 10:00:00] Load weight end. type=Qwen3NextForCausalLM, avail mem=30.00 GB, mem usage=40.00 GB.\n"
            "[2026-01-01 10:00:01] Scheduler hit an exception: Traceback (most recent call last):\n"
            '  File "/x/sglang/srt/model_executor/model_runner.py", line 9, in init_memory_pool\n'
            "    pool()\n"
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n")
    r = inspect_text(text)
    return next(f["message"] for f in r["findings"] if f["code"] == "oom")


def test_oom_hint_names_flags_the_version_accepts():
    new = _startup_oom("sglang==0.5.23")
    assert "--mamba-scheduler-strategy" not in new and "--cuda-graph-max-bs " not in new
    assert "--mamba-radix-cache-strategy" in new and "--cuda-graph-max-bs-decode" in new
    old = _startup_oom("sglang==0.5.11")
    assert "--mamba-scheduler-strategy" in old and "--cuda-graph-max-bs size" in old


def test_sglang_serve_positional_model_path():
    """``sglang serve MODEL`` (0.5.19+): the positional is the model path where argv is read;
    editing it keeps it positional; other launchers have no positional model."""
    from mambaconsole.sglang.argv import LaunchCommand

    c = LaunchCommand.parse("sglang serve Qwen/Qwen3-Next-80B-A3B --tp 2")
    assert c.get("model_path") == "Qwen/Qwen3-Next-80B-A3B" and c.fields()["tp_size"] == "2"
    assert c.set("model_path", "/models/q").render() == "sglang serve /models/q --tp 2"
    assert c.remove("model_path").fields() == {"tp_size": "2"}
    assert LaunchCommand.parse("python3 -m sglang.launch_server --model-path m --tp 2").get("model_path") == "m"


def test_renamed_flags_from_the_table():
    """argv.renamed_flag knows every rename SGLang's parsers name, per version."""
    from mambaconsole.sglang.argv import LaunchCommand, renamed_flag

    assert renamed_flag("--cuda-graph-max-bs", "0.5.23") == ("--cuda-graph-max-bs-decode", "removed")
    assert renamed_flag("--stream-output", "0.5.19") == ("--incremental-streaming-output", "deprecated")
    assert renamed_flag("--cuda-graph-max-bs", "0.5.9") == ("--cuda-graph-max-bs-decode", "old")
    assert renamed_flag("--tp-size", "0.5.23") is None
    probs = LaunchCommand.parse("sglang serve Qwen/Q --tp 2").check(version="0.5.23")
    assert not [p for p in probs if "positional" in p.message]


def test_unknown_flag_hints_come_from_the_table():
    """What the resolver says of a flag the node's parser does not know comes from the one
    table (the node-side resolver has none of its own). Expected sentences: the renames the
    issue and SGLang's release notes name (--cuda-graph-max-bs -> --cuda-graph-max-bs-decode in
    0.5.14, --stream-output -> --incremental-streaming-output in 0.5.10); a removal's release is
    the first one after the last release whose parser took the flag (read off ACCEPTED here)."""
    assert F.unknown_flag_hint("--cuda-graph-max-bs", "0.5.23") == \
        "unknown in SGLang 0.5.23; renamed `--cuda-graph-max-bs-decode` in 0.5.14"
    assert F.unknown_flag_hint("--stream-output", "0.5.23") == \
        "unknown in SGLang 0.5.23; renamed `--incremental-streaming-output` in 0.5.10"
    assert F.unknown_flag_hint("--cuda-graph-max-bs-decode", "0.5.11") == \
        "unknown in SGLang 0.5.11; it is the 0.5.14+ name of `--cuda-graph-max-bs`, use that here"
    # renamed twice: each rename up to the name 0.5.23 takes, with the value SGLang names
    piecewise = F.unknown_flag_hint("--enable-piecewise-cuda-graph", "0.5.23")
    assert piecewise.startswith("unknown in SGLang 0.5.23; renamed `--enforce-piecewise-cuda-graph` in 0.5.10, then ")
    assert "`--cuda-graph-backend-prefill=tc_piecewise`" in piecewise
    flag = "--enable-double-sparsity"
    last = max(i for i, v in enumerate(VERSIONS) if flag in ACCEPTED[v])
    assert F.unknown_flag_hint(flag, "0.5.23") == f"unknown in SGLang 0.5.23; removed in {VERSIONS[last + 1]}"
    assert F.unknown_flag_hint("--tp-szie", "0.5.23") is None  # no release took it: the parser's own guess stands
    assert F.unknown_flag_hint("--cuda-graph-max-bs", "0.6.0") is None  # not covered: not guessed
    ue = {"message": "m", "unknown_flags": ["--stream-output", "--tp-szie"],
          "suggestions": {"--stream-output": "unknown in SGLang 0.5.23; did you mean `--stream-interval`?",
                          "--tp-szie": "unknown in SGLang 0.5.23; did you mean `--tp-size`?"}}
    assert F.explain_unknown_flags(ue, "0.5.23")["suggestions"] == {
        "--stream-output": "unknown in SGLang 0.5.23; renamed `--incremental-streaming-output` in 0.5.10",
        "--tp-szie": "unknown in SGLang 0.5.23; did you mean `--tp-size`?"}


def test_one_rename_table():
    """The node-side resolver and the simulated node keep no rename table of their own."""
    from pathlib import Path

    pkg = Path(F.__file__).resolve().parents[1]
    for rel in ("agent/resolver.py", "sim/preflight.py", "sglang/argv.py"):
        text = (pkg / rel).read_text()
        assert "--mamba-radix-cache-strategy\", \"0.5.14" not in text and "RENAMED" not in text, rel


def _real_0523_replacements() -> dict[str, str]:
    """old flag -> the replacement 0.5.23's own deprecation warnings name, read off the real
    server logs recorded on this machine (``tests/data/logs/real-0.5.23-*.log``)."""
    import re
    from pathlib import Path

    said = {}
    for log in (Path(__file__).parent / "data" / "logs").glob("real-0.5.23-*.log"):
        for m in re.finditer(r"'(--[\w-]+)' is deprecated and will be removed in a future release\. "
                             r"Use '([^']+)' instead\.", log.read_text()):
            said[m.group(1)] = m.group(2)
    return said


def test_a_replacement_with_a_value_is_named_as_sglang_names_it():
    """0.5.23 names ``--cuda-graph-backend-{decode,prefill}=disabled`` for ``--disable-cuda-graph``:
    a value and brace alternatives, not a bare option string; the table's replacement is that
    text (each option it names is accepted), not None."""
    said = _real_0523_replacements()
    assert said, "the real logs hold a deprecation warning"
    for old, new in said.items():
        assert F.replacement(old, "0.5.23") == new
        assert F.usable([old], "0.5.23") == [old]  # still accepted there (deprecated): named as given
    assert F.replacement("--disable-cuda-graph", "0.5.11") is None  # not yet renamed then
    assert F._names("--cuda-graph-backend-{decode,prefill}=disabled") == [
        "--cuda-graph-backend-decode", "--cuda-graph-backend-prefill"]


def test_a_removed_flag_s_history_names_a_replacement_with_a_value():
    """A flag a version no longer takes, renamed to an option with a value: the hint names the
    rename as SGLang wrote it (the table's own deprecation notes)."""
    from mambaconsole.sglang.flag_table import DEPRECATED

    old, new = "--enforce-piecewise-cuda-graph", DEPRECATED["0.5.14"]["--enforce-piecewise-cuda-graph"]
    assert "=" in new
    last = next(v for v in reversed(VERSIONS) if F.accepts(old, v) is False and F._takes(v, new))
    hint = F.unknown_flag_hint(old, last)
    assert hint is not None and f"`{new}`" in hint
