"""One memory unit on every screen (issue 17 item 6): the CLI's text outputs (``inspect``,
``inspect --config``, ``report``) label memory GiB like the console's panes, with SGLang's "GB"
numbers unchanged (SGLang 0.5.23 divides by 1024³: ``GB = 1024 * 1024 * 1024`` in
``srt/mem_cache/memory_pool.py``) and the note that the log calls them "GB" said once.

Expected numbers are read off the inputs' own lines (case-211's ``Load weight end`` and
``available_gpu_mem=`` lines), never from the code."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

from mambaconsole.cli import main

CASES = Path(__file__).parent / "data" / "cases"
CASE_211 = CASES / "bank-2" / "case-211" / "input.log"
#: a number followed by the unit "GB" as a word (not "80GB" inside a GPU's name, not the quoted note)
_GB_UNIT = re.compile(r"\d\s*GB\b")


def _log_value(text: str, pattern: str) -> str:
    return re.search(pattern, text).group(1)


def test_inspect_labels_sglang_gb_as_gib_and_says_so_once(capsys):
    log = CASE_211.read_text()
    weights = _log_value(log, r"Load weight end\..*mem usage=([\d.]+) GB")
    after_init = _log_value(log, r"available_gpu_mem=([\d.]+) GB")
    assert main(["inspect", str(CASE_211), "--what-if-mamba-slots", "10"]) == 0
    out = capsys.readouterr().out
    assert not _GB_UNIT.search(out), [ln for ln in out.splitlines() if _GB_UNIT.search(ln)]
    mem = next(ln for ln in out.splitlines() if ln.startswith("memory ("))
    assert mem.startswith("memory (GiB") and f"weights {float(weights):g}" in mem
    assert out.count('"GB"') == 1  # the log's own word, said once
    assert f"free GPU memory after init {float(after_init):g} GiB" in out
    assert re.search(r"[\d.]+ GiB per slot", out) and re.search(r"frees [\d.]+ GiB", out)
    assert "memory per rank (GiB" in out  # case-211 has TP0 and TP1


def test_inspect_log_without_memory_lines_still_names_the_unit(capsys):
    assert main(["inspect", str(CASES / "bank-2" / "case-212" / "input.log")]) == 0
    out = capsys.readouterr().out
    assert "memory (GiB" in out and "not shown in this input" in out and "(GB)" not in out


def test_server_info_startup_free_is_gib(capsys):
    assert main(["inspect", str(CASES / "case-26" / "input.txt")]) == 0
    out = capsys.readouterr().out
    assert "startup free 1.913 GiB" in out  # case-26 expected.md: 1.913 (SGLang's GB)
    assert not _GB_UNIT.search(out)


def test_report_memory_budget_in_gib():
    from mambaconsole.commands.report import render

    log = CASE_211.read_text()
    weights = _log_value(log, r"Load weight end\..*mem usage=([\d.]+) GB")
    run = SimpleNamespace(run_id="r1", record={}, argv=["python3", "-m", "sglang.launch_server"], started=None,
                          ended=None, state_text="exited (1)", exit_code=None, log_path="/x")
    text = render(host="node", facts={}, gpu=None, run=run, prev=None, log_text=log, redact=None)
    head = next(ln for ln in text.splitlines() if ln.startswith("### Memory budget"))
    assert "GiB" in head and '"GB"' in head
    assert "| item | GiB |" in text and f"| weights | {weights} |" in text
    # the only "GB" after a number is the log's own words quoted in the outcome's error lines
    before_outcome = text.split("### Outcome")[0]
    assert not _GB_UNIT.search(before_outcome)


def test_count_says_one_in_the_singular():
    from mambaconsole.units import count

    assert [count(n, "request") for n in (0, 1, 2, 4096)] == ["0 requests", "1 request", "2 requests", "4,096 requests"]
    assert count(1, "batch", "batches") == "1 batch" and count(3, "batch", "batches") == "3 batches"
