"""The budget model against every shared case with startup memory lines (issue 18): what it
predicts beside what the case logged, in a table in the test output.

The cases are ``tests/data/cases`` (copied from ``shared/cases``); the models' ``config.json``
are public (``tests/data/shared-case-models/<model>/``, each with a SOURCE saying where it
came from); ``cases.json`` there says per case which model, the attention TP size and what was
assumed, or why nothing can be predicted. The logged numbers are read by the project's log
reader (:func:`mambaconsole.sglang.inspect.per_rank_memory`), the predictions come from
:class:`mambaconsole.sglang.budget.ModelShape` (SGLang's ``Mamba2StateShape`` and KV cell
sizes): the test asserts each prediction the inputs determine, to the log's two decimals.

The full prediction (KV #tokens and ``max_mamba_cache_size`` from the free memory) needs the
ServerArgs (``--mem-fraction-static``, ``--mamba-full-memory-ratio``, ...) and the "Load weight
end" line of the same boot; no shared case with a public config has both, and each row says
what is missing."""

from __future__ import annotations

import json
import re

import pytest

from fixtures.sglang_cases import CASES
from mambaconsole.sglang.budget import GIB, ModelShape
from mambaconsole.sglang.inspect import inspect_text, per_rank_memory

MODELS = CASES.parents[0] / "shared-case-models"
TABLE = json.loads((MODELS / "cases.json").read_text())


def memory_inputs() -> list[str]:
    """Every case input with startup memory lines: weights, pool sizes, KV #tokens or the ready
    summary's max_total_num_tokens (the survey; names relative to tests/data/cases)."""
    out = []
    for path in sorted(CASES.glob("**/input.*")):
        text = path.read_text(errors="replace")
        try:
            r = inspect_text(text)
        except Exception:  # not an SGLang input (a command, prose)
            continue
        mem = {k: v for k, v in (r.get("memory_gb") or {}).items() if v is not None}
        if mem or r.get("mamba_slots") or re.search(r"max_total_num_tokens=\d", text):
            out.append(str(path.relative_to(CASES)))
    return out


def logged(name: str) -> dict:
    """The first rank's memory facts as the log states them (GB = GiB, SGLang's unit)."""
    ranks = per_rank_memory((CASES / name).read_text(errors="replace"))
    full = [r for r in ranks.values() if r.get("kv_tokens") or r.get("mamba_ssm")]
    return (full or list(ranks.values()) or [{}])[0]


def rows_for(name: str) -> list[tuple[str, str, str, str]]:
    """(what, predicted, logged, verdict) rows of one case; verdict ``ok``, ``MISMATCH`` or
    ``not determinable: <why>``."""
    entry = TABLE[name]
    if "model" not in entry:
        return [("all", "-", "-", f"not determinable: {entry['why']}")]
    config = json.loads((MODELS / entry["model"] / "config.json").read_text())
    shape, tp, log = ModelShape.from_config(config), int(entry["attn_tp"]), logged(name)
    rows = []

    def row(what: str, predicted: float, logged_value: float, tolerance: float = 0.005) -> None:
        ok = abs(predicted - logged_value) <= tolerance + 1e-9
        rows.append((what, f"{predicted:.3f}", f"{logged_value:g}", "ok" if ok else "MISMATCH"))

    slots = log.get("mamba_slots")
    if slots and log.get("mamba_conv") is not None:
        rows_n = slots + 1  # MambaPool holds size + 1 rows
        row(f"Mamba conv GiB, {slots} slots (+1 row)", shape.conv_bytes_per_slot(tp) * rows_n / GIB, log["mamba_conv"])
        row(f"Mamba SSM GiB, {slots} slots (+1 row)", shape.ssm_bytes_per_slot(tp) * rows_n / GIB, log["mamba_ssm"])
    elif log.get("mamba_ssm") is not None:
        rows.append(("Mamba conv/SSM GiB", "-", f"{log['mamba_conv']:g}/{log['mamba_ssm']:g}",
                     "not determinable: the line gives no slot count (radix cache off: the pool is "
                     "--max-running-requests + 1 rows, not shown)"))
    tokens = log.get("kv_tokens")
    if tokens and log.get("kv_cache") is not None:
        # K and V of tokens + page_size rows (page 1), each logged to two decimals: their sum to 0.01
        row(f"K+V GiB, {tokens:,} tokens", (tokens + 1) * shape.kv_cell_bytes(tp) / GIB, log["kv_cache"], 0.01)
    missing = ["no ServerArgs (--mem-fraction-static, --mamba-full-memory-ratio, --max-running-requests)"]
    if log.get("avail_after_load") is None:
        missing.append("no 'Load weight end' line")
    missing.append("SGLang version not stated")
    rows.append(("KV #tokens, max_mamba_cache_size", "-", f"{tokens or '-'}, {slots or '-'}",
                 "not determinable: " + "; ".join(missing)))
    return rows


def test_every_case_with_memory_lines_is_in_the_table():
    found = memory_inputs()
    assert "bank-2/case-211/input.log" in found and "case-02/input.log" in found  # the survey sees them
    assert set(found) - set(TABLE) == set(), "classify these cases in tests/data/shared-case-models/cases.json"
    for entry in TABLE.values():
        if isinstance(entry, dict) and "model" in entry:
            assert (MODELS / entry["model"] / "config.json").is_file() and (MODELS / entry["model"] / "SOURCE").is_file()


def test_prediction_vs_the_logged_numbers(capsys):
    lines, mismatches, checked = [], [], 0
    for name in memory_inputs():
        entry = TABLE[name]
        head = f"{name}: {entry.get('model', '-')}"
        if "model" in entry:
            head += f" (attention TP {entry['attn_tp']}; {entry['model_from']}; assumed: {'; '.join(entry['assumed'])})"
        lines.append(head)
        for what, predicted, logged_value, verdict in rows_for(name):
            lines.append(f"    {what:<40} predicted {predicted:>8}  logged {logged_value:>12}  {verdict}")
            checked += verdict in ("ok", "MISMATCH")
            if verdict == "MISMATCH":
                mismatches.append(f"{name}: {what}")
    with capsys.disabled():
        print("\nbudget model vs the shared cases' startup memory lines (GiB; SGLang's GB):\n" + "\n".join(lines))
    assert checked >= 4  # case-211: conv, SSM, K+V; case-02: K+V; each from the case's own lines
    assert mismatches == []


@pytest.mark.parametrize("name", ["bank-2/case-211/input.log"])
def test_case_211_slot_sizes_by_hand(name):
    """The same numbers without the model: 397B-A17B at TP 2 (config: 64 value / 16 key GDN
    heads of 128, conv kernel 4, 45 GDN layers; 1 KV head per rank of 256, 15 full layers)."""
    log = logged(name)
    conv_per_slot = (64 * 128 + 2 * 16 * 128) // 2 * (4 - 1) * 2 * 45  # bf16 conv state
    ssm_per_slot = 64 // 2 * 128 * 128 * 4 * 45  # float32 SSM state
    assert round(conv_per_slot * 83 / GIB, 2) == log["mamba_conv"] == 0.13
    assert round(ssm_per_slot * 83 / GIB, 2) == log["mamba_ssm"] == 7.29
    assert round((580364 + 1) * 1 * 256 * 15 * 2 / GIB, 2) == 4.15  # K (and V) of the logged 580,364 tokens
