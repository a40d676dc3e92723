"""The run fold's memory is bounded by what it reads back (issue 14): a log holding many boots
(a server relaunched into the same file, or a flood of startup lines) keeps the decode lines
of its last boot only; every claim read from the fold is the same as before.

Input: the real SGLang 0.5.23 boot and serving lines (tests/data/logs/real-0.5.23-qnext.log),
the whole log written three times into one file (three boots). Expected counts are counted
here from the lines written."""

from __future__ import annotations

from pathlib import Path

from mambaconsole.sglang.events import LogParser
from mambaconsole.sglang.run_fold import RunFold
from mambaconsole.sglang.summary import summary_of

REAL = (Path(__file__).parent / "data" / "logs" / "real-0.5.23-qnext.log").read_text().splitlines()


def fold_of(lines: list[str]) -> RunFold:
    p = LogParser()
    fold = RunFold()
    for ev in p.feed_many(lines):
        fold.feed(ev)
    for ev in p.flush():
        fold.feed(ev)
    return fold


def test_earlier_boots_let_their_decode_lines_go():
    decodes_per_boot = sum("Decode batch" in ln for ln in REAL)
    assert decodes_per_boot >= 2
    fold = fold_of(REAL * 3)
    assert len(fold.boots) == 3
    assert [len(b.decodes) for b in fold.boots] == [0, 0, decodes_per_boot]
    assert [len(b.usage_pairs) for b in fold.boots[:-1]] == [0, 0]


def test_the_last_boot_reads_the_same_as_a_log_of_that_boot_alone():
    alone, three = summary_of(fold_of(REAL)), summary_of(fold_of(REAL * 3))
    assert three.last_decode() == alone.last_decode()
    assert three.capacity() == alone.capacity()
    assert three.outcome == alone.outcome
    assert three.spec == alone.spec
