"""``mambaconsole report``: a run on the loopback sshd node whose argv and log carry a user
name, a home path and a laptop name; the report holds none of them (placeholders instead),
and keeps them with --no-redact. Expected text is derived from the inputs written here and
from case-24's expected.md, never from the report code."""

from __future__ import annotations

import asyncio
import re
import sys
import textwrap
from pathlib import Path

from mambaconsole.cli import main
from mambaconsole.node import node_for
from mambaconsole.node.runs import RunStore

CASES = Path(__file__).parent / "data" / "cases"

USER = "alice"
HOME = f"/home/{USER}"
LAPTOP = "alice-thinkpad"
MODEL = f"{HOME}/models/Qwen3.6-27B"

# Prints the file argv[1] and exits 1 (a server that crashed after printing its log).
PRINT_AND_FAIL = textwrap.dedent("""
    import sys
    sys.stdout.write(open(sys.argv[1], encoding="utf-8", errors="replace").read())
    sys.stdout.flush()
    sys.exit(1)
""")

# 0.5.12 dataclass-repr dump (reference §3.2): SGLang used no_buffer although extra_buffer was given
DUMP = ("[2026-10-01 12:00:00] server_args=ServerArgs(model_path='" + MODEL + "', tokenizer_path='" + MODEL
        + "', tokenizer_mode='auto', mem_fraction_static=0.85, disable_radix_cache=False, "
        "mamba_scheduler_strategy='no_buffer', mamba_track_interval=256, speculative_algorithm='EAGLE')")


def _start(tmp_path, log_text: str, extra: list[str], launched_by: str):
    log = tmp_path / f"log-{len(extra)}.txt"
    log.write_text(log_text)
    script = tmp_path / "print_and_fail.py"
    script.write_text(PRINT_AND_FAIL)

    async def go():
        node = node_for("gpu-node")
        try:
            store = RunStore(node)
            run = await store.start([sys.executable, str(script), str(log), *extra], launched_by=launched_by)
            for _ in range(200):
                if (await store.get(run.run_id)).state == "exited":
                    break
                await asyncio.sleep(0.05)
            return run
        finally:
            await node.close()

    return asyncio.run(go())


def test_report_redacts_user_home_and_host(ssh_home, tmp_path, capsys):
    prev_args = ["--model-path", MODEL, "--mem-fraction-static", "0.80"]
    cur_args = ["--model-path", MODEL, "--mem-fraction-static", "0.85", "--mamba-scheduler-strategy",
                "extra_buffer", "--served-model-name", f"{USER}-debug"]
    _start(tmp_path, "first run\n", prev_args, f"{USER}@{LAPTOP}")
    crash = (CASES / "case-24" / "input.log").read_text()
    run = _start(tmp_path, DUMP + "\n" + crash, cur_args, f"{USER}@{LAPTOP}")

    assert main(["report", "gpu-node"]) == 0
    report = capsys.readouterr().out
    assert f"run `{run.run_id}`" in report
    # nothing personal: the user name, the home path, the laptop
    assert USER not in report.lower() and LAPTOP not in report and HOME not in report
    # ... but the rest of each value stays readable
    assert MODEL.replace(HOME, "<home>") in report
    assert "<user>-debug" in report and "<user>@<host>" in report
    # argv diff from the previous run: the one changed value, the added flags
    assert re.search(r"\| --mem-fraction-static \| 0\.80 \| 0\.85 \|", report)
    assert re.search(r"\| --mamba-scheduler-strategy \| \(not given\) \| extra_buffer \|", report)
    # the value SGLang used instead of the given one (the dump above)
    assert re.search(r"\| --mamba-scheduler-strategy \| extra_buffer \| no_buffer \|", report)
    # outcome and error line (case-24 expected.md items 3 and 4: crashed after startup)
    assert "**crashed**" in report and "exit code 1" in report
    assert "RuntimeError: moe_sum_reduce CUDA kernel (small-token) launch failed" in report

    assert main(["report", "gpu-node", "--run", run.run_id, "--no-redact"]) == 0
    raw = capsys.readouterr().out
    assert MODEL in raw and f"{USER}@{LAPTOP}" in raw and f"{USER}-debug" in raw


def test_report_unknown_run_is_one_line(ssh_home, capsys):
    assert main(["report", "gpu-node", "--run", "20990101-000000-beef"]) != 0
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "20990101-000000-beef" in err


def test_report_argv_diff_matches_options_by_setting():
    """The report's diff table reads argv like the console's history (one splitter):
    ``--tp 2`` → ``--tp-size 4`` is one changed row (SGLang's alias for the same field),
    a bare flag removed shows as true → (not given)."""
    from mambaconsole.commands.report import argv_diff

    launch = ["python", "-m", "sglang.launch_server"]
    rows = argv_diff(launch + ["--tp", "2", "--disable-radix-cache", "--mem-fraction-static", "0.8"],
                     launch + ["--tp-size", "4", "--mem-fraction-static", "0.8", "--max-running-requests", "8"])
    assert sorted(rows, key=str) == sorted([("--tp-size", "2", "4"), ("--max-running-requests", None, "8"),
                                            ("--disable-radix-cache", True, None)], key=str)
