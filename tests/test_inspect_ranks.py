"""``mambaconsole inspect``'s per-rank memory table: every rank the log names has a row, a rank
that printed no line shows "—" (never another rank's value). Expected values from the cases'
expected.md, read off the real inputs."""

from __future__ import annotations

import json

from fixtures.sglang_cases import CASES
from mambaconsole.cli import main


def _table(capsys, case: str) -> dict[str, dict[str, str]]:
    assert main(["inspect", str(CASES / case / "input.log")]) == 0
    out = capsys.readouterr().out.splitlines()
    start = next(i for i, ln in enumerate(out) if ln.startswith("memory per rank"))
    rows = {}
    for ln in out[start + 1:]:
        if not ln.startswith("  "):
            break
        if ln.startswith("  no rank printed: "):  # a line no rank printed: "—" on every rank
            for key in ln.split(": ", 1)[1].split(", "):
                for cells in rows.values():
                    cells[key] = "—"
            continue
        rank, cells = ln[2:18].strip(), ln[18:].strip()
        rows[rank] = dict(c.split(" ", 1) for c in cells.split(", ") if not c.startswith("graph bs"))
    return rows


def test_case01_every_rank_has_a_row(capsys):
    rows = _table(capsys, "case-01")
    # expected.md item 1: four ranks seen (TP0..TP3)
    assert list(rows) == ["TP0", "TP1", "TP2", "TP3"]
    # item 2: weights on TP0 37.41 GB, 9.29 GB free after load; no other rank printed the line
    assert (rows["TP0"]["weights"], rows["TP0"]["avail_after_load"]) == ("37.41", "9.29")
    assert {rows[r]["weights"] for r in ("TP1", "TP2", "TP3")} == {"—"}
    # item 4: conv 0.02 + ssm 0.86 GB for TP0 and TP1
    for r in ("TP0", "TP1"):
        assert (rows[r]["mamba_conv"], rows[r]["mamba_ssm"]) == ("0.02", "0.86")
    # item 6: TP2's line is cut (ignored), TP3 has none: not seen
    for r in ("TP2", "TP3"):
        assert (rows[r]["mamba_conv"], rows[r]["mamba_ssm"], rows[r]["mamba_total"]) == ("—", "—", "—")
    # items 5 and 7: slots and KV cache not reported on any rank
    assert {rows[r]["mamba_slots"] for r in rows} == {"—"} and {rows[r]["kv_cache"] for r in rows} == {"—"}


def test_case01_json_names_the_ranks_and_the_cut_line(capsys):
    assert main(["inspect", str(CASES / "case-01" / "input.log"), "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["ranks"] == ["TP0", "TP1", "TP2", "TP3"]
    msgs = {f["code"]: [] for f in r["findings"]}
    for f in r["findings"]:
        msgs[f["code"]].append(f["message"])
    # item 6: the truncated "Mamba Cache is alloca" of TP2 is ignored and said so
    assert any("TP2" in m for m in msgs["line_cut"])
    assert any(m.startswith("Mamba cache line seen for TP0, TP1 but not for TP2, TP3") for m in msgs["rank_missing_line"])


def test_case02_missing_kv_line_is_not_copied(capsys):
    rows = _table(capsys, "case-02")
    # expected.md items 1-4: four ranks; KV 63.78 GB on DP0, DP1, DP3; DP2 not seen; pool-end free memory per rank
    assert list(rows) == ["DP0 TP0 EP0", "DP1 TP1 EP1", "DP2 TP2 EP2", "DP3 TP3 EP3"]
    assert [rows[r]["kv_cache"] for r in rows] == ["63.78", "63.78", "—", "63.78"]
    assert [rows[r]["avail_after_pool"] for r in rows] == ["34.15", "34.12", "34.12", "34.27"]
