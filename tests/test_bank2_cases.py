"""Bank 2 of the real-world cases (``tests/data/cases/bank-2``, copied from
``shared/cases/bank-2``): every check of each case's ``expected.json`` (written with the
case, from its ``expected.md``) through the real ``mambaconsole inspect FILE --json``, and
what ``expected.md`` lists beyond the JSON keys."""

from __future__ import annotations

import json

import pytest

from mambaconsole.cli import main
from fixtures.sglang_cases import CASES

BANK2 = CASES / "bank-2"
SPECS = sorted(BANK2.glob("case-*/expected.json"))


def inspect(capsys, path, *extra: str) -> dict:
    assert main(["inspect", str(path), "--json", *extra]) == 0
    return json.loads(capsys.readouterr().out)


def get(obj, path: str):
    for part in path.split("."):
        obj = obj[int(part)] if isinstance(obj, list) else obj[part]
    return obj


def failed(out: dict, c: dict) -> str | None:
    """The check's verdict, with the semantics of ``shared/tools/check_cases.py``."""
    try:
        v = get(out, c["path"])
    except (KeyError, IndexError, ValueError, TypeError):
        return f"missing {c['path']}"
    if "eq" in c and v != c["eq"]:
        return f"{c['path']} = {v!r}, want {c['eq']!r}"
    if "in" in c and v not in c["in"]:
        return f"{c['path']} = {v!r}, want one of {c['in']!r}"
    if "approx" in c and (not isinstance(v, (int, float)) or isinstance(v, bool)
                          or abs(v - c["approx"]) > c.get("tol", 0.005)):
        return f"{c['path']} = {v!r}, want {c['approx']}"
    if "contains" in c and (not isinstance(v, str) or c["contains"] not in v):
        return f"{c['path']} = {v!r}, want text containing {c['contains']!r}"
    return None


def test_bank2_is_complete():
    assert len(SPECS) == 12


@pytest.mark.parametrize("spec", SPECS, ids=[p.parent.name for p in SPECS])
def test_expected_json(capsys, spec):
    s = json.loads(spec.read_text())
    out = inspect(capsys, spec.parent / s["input"])
    bad = [m for m in (failed(out, c) for c in s["checks"]) if m]
    assert not bad, bad


def codes(r):
    return {f["code"]: f["message"] for f in r["findings"]}


def test_case201_pool_and_decode(capsys):
    """expected.md items 2-3: the 16-slot pool is derived, the later prefill line does not
    overwrite the last decode line; capacity sees 3 slots held per running request."""
    r = inspect(capsys, BANK2 / "case-201" / "input.log")
    assert r["mamba_slots"] == 16 and r["last_decode"]["gen_throughput"] == 131.59
    assert r["capacity"]["pool_slots"] == 16


def test_case203_both_runs(capsys):
    """items 2-3: run A mean accept len (1.55+1.85+1.48+1.85+2.10)/5, run B 3.77/0.56 last."""
    a = inspect(capsys, BANK2 / "case-203" / "input.log")
    assert a["spec"]["batches"] == 5 and a["spec"]["mean_accept_len"] == pytest.approx(8.83 / 5)
    b = inspect(capsys, BANK2 / "case-203" / "input.txt")
    assert (b["last_decode"]["accept_len"], b["last_decode"]["accept_rate"]) == (3.77, 0.56)
    assert b["spec"]["mean_accept_len"] == pytest.approx((3.00 + 3.20 + 3.45 + 4.38 + 3.77) / 5)


def test_case204_draft_model_is_not_the_target(capsys):
    """item 3: target 21.90 GB, the MTP draft 1.80 GB loaded after capture is the draft's;
    one boot; the readable per-rank view says the draft's weights."""
    r = inspect(capsys, BANK2 / "case-204" / "input.log")
    assert r["boots"] == 1 and r["memory_gb"]["weights"] == 21.90 and r["memory_gb"]["cuda_graph"] == 0.09
    assert main(["inspect", str(BANK2 / "case-204" / "input.log")]) == 0
    assert "outcome: ready" in capsys.readouterr().out


def test_case206_process_panels(capsys):
    """expected.md: the container panel has 0 rows and no 'No running processes found'; the
    host panel lists GPU 0 PID 28290 with 1012 MiB."""
    c = codes(inspect(capsys, BANK2 / "case-206" / "input.txt"))
    assert "panel 1 is empty" in c["gpu_processes_hidden"]
    assert "GPU0 PID 28290 python 1012 MiB" in c["gpu_processes_only"]


def test_case207_root_cause_is_sglangs(capsys):
    """item 2: OSError from the detokenizer, not the harness's TimeoutError."""
    r = inspect(capsys, BANK2 / "case-207" / "input.log")
    assert r["failure"]["exception"] == "OSError" and r["outcome"] == "crashed"


def test_case209_report_quotes(capsys):
    """A Markdown report is read (not refused); the SGLang messages it quotes are named as
    quotes, not as this run's log."""
    r = inspect(capsys, BANK2 / "case-209" / "input.txt")
    assert r["failure"] is None and r["outcome"] in ("starting", "unknown")
    assert "Init torch distributed ends" in codes(r)["quoted_only"]


def test_case210_and_212_oom_numbers(capsys):
    """case-210 item 3 (this process 94.77 GiB, no graph pools clause); case-212 item 1:
    34.50 MiB in private pools (CUDA graphs) is read, reserved-unallocated 639.99 MiB."""
    o = inspect(capsys, BANK2 / "case-210" / "input.log")["failure"]["oom"]
    assert o["in_use_gib"] == pytest.approx(94.77) and o["graph_pools_gib"] == 0.0
    assert o["allocated_gib"] == pytest.approx(79.00)
    o = inspect(capsys, BANK2 / "case-212" / "input.log")["failure"]["oom"]
    assert o["graph_pools_gib"] == pytest.approx(34.50 / 1024)
    assert o["reserved_unallocated_gib"] == pytest.approx(639.99 / 1024)
    assert o["allocated_gib"] == pytest.approx(73.96)


def test_case212_readable_advice_fits_the_phase(capsys):
    """case-212 expected.md item 3: runtime, after capture; the suggested actions are
    --mem-fraction-static, --chunked-prefill-size, --max-running-requests (not the load-time
    advice); what the input does not show is said to be not shown."""
    assert main(["inspect", str(BANK2 / "case-212" / "input.log")]) == 0
    out = capsys.readouterr().out
    assert "phase runtime" in out and "cannot fix it" not in out
    oom = next(ln for ln in out.splitlines() if ln.startswith("! oom:"))
    assert all(f in oom for f in ("--mem-fraction-static", "--chunked-prefill-size", "--max-running-requests"))
    assert "SGLang version: not shown" in out and "memory (GiB; SGLang logs \"GB\" = bytes/1024³): not shown" in out
