"""``inspect --what-if-mamba-slots N`` on an input that cannot answer it says why (issue 17,
polish): the seed's OOM (the server died allocating the Mamba pool, so SGLang never printed it),
a runtime OOM whose start-up lines are not in the paste, an early-2025 pool line without its
slot count, a GPU table; and a what-if part the input cannot give names the missing fact
instead of "not reported". What each input lacks is checked on the input itself."""

from __future__ import annotations

import re
from pathlib import Path

from mambaconsole.cli import main
from mambaconsole.sim import demo

CASES = Path(__file__).parent / "data" / "cases"


def _what_if(capsys, path: Path, n: int = 20) -> str:
    assert main(["inspect", str(path), "--what-if-mamba-slots", str(n)]) == 0
    out = capsys.readouterr().out
    lines = [ln.strip() for ln in out.splitlines() if ln.strip().startswith(f"what-if --max-mamba-cache-size {n}:")]
    assert len(lines) == 1, out
    return lines[0]


def test_seed_oom_says_the_pool_was_never_printed(sim_process, free_port, capsys, tmp_path):
    run = sim_process("0.5.11", demo.first_failing_argv("0.5.11", port=free_port))
    run.wait()
    log = run.text()
    assert "torch.OutOfMemoryError" in log and "Mamba Cache is allocated" not in log  # died allocating it
    line = _what_if(capsys, run.log)
    assert "nothing to add" in line and "before SGLang printed its Mamba pool" in line, line
    assert "--config" in line and "startup" in line, line


def test_runtime_oom_paste_without_startup_lines(capsys):
    path = CASES / "bank-2" / "case-212" / "input.log"
    text = path.read_text()
    assert "Mamba Cache is allocated" not in text and "mamba usage" not in text
    line = _what_if(capsys, path)
    assert "nothing to add" in line and "not in it" in line, line


def test_pool_line_without_slot_count(capsys):
    path = CASES / "case-01" / "input.log"
    pool = [ln for ln in path.read_text().splitlines() if "Mamba Cache is allocated." in ln]
    assert pool and not any("max_mamba_cache_size" in ln for ln in pool)
    line = _what_if(capsys, path)
    assert "nothing to add" in line and "no max_mamba_cache_size" in line, line


def test_gpu_table_has_no_pool(capsys):
    line = _what_if(capsys, CASES / "case-28" / "input.txt")
    assert "nothing to add" in line and "gpu table" in line, line


def test_what_if_part_without_its_fact_names_it(capsys):
    """case-211: the pool line gives slots and cost (so memory freed is computed), but no cap
    warning and no decode line say how many slots a request reserves."""
    path = CASES / "bank-2" / "case-211" / "input.log"
    text = path.read_text()
    slots = int(re.search(r"max_mamba_cache_size: (\d+)", text).group(1))
    assert "is capped to" not in text and "Decode batch" not in text
    line = _what_if(capsys, path, slots // 2)
    assert "not reported" not in line and "concurrency unknown (slots reserved per request not shown)" in line, line
    assert re.search(r"frees [\d.]+ GiB", line), line
