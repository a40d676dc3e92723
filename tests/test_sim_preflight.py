"""The simulated node answers a pre-flight resolve in ``mambaconsole resolve --json``'s shape
(issue 4), run as a process the way the console would run it on the node."""

from __future__ import annotations

import json
import subprocess
import sys

from mambaconsole.sim import demo

KEYS = {"sglang_version", "python", "ok", "elapsed_s", "usage_error", "error", "fields", "messages"}
FIELD_KEYS = {"value", "default", "given", "option", "source", "writes"}


def resolve(version: str, argv: list[str]) -> dict:
    out = subprocess.run([sys.executable, "-m", "mambaconsole.sim", "--sim-version", version, "--sim-resolve", *argv],
                         capture_output=True, text=True, timeout=60, check=True)
    return json.loads(out.stdout)


def test_phantom_no_buffer_on_0_5_11():
    # the user's question: extra_buffer was never given, so why does the error say no_buffer?
    argv = [a for a in demo.no_buffer_argv("0.5.11") if a not in ("--mamba-scheduler-strategy", "no_buffer")]
    rep = resolve("0.5.11", argv)
    assert KEYS <= set(rep) and rep["simulated"] is True
    assert rep["ok"] is False and rep["usage_error"] is None
    err = rep["error"]
    assert err["type"] == "ValueError" and "no_buffer.To use radix cache" in err["message"]
    assert (err["file"], err["line"], err["function"]) == ("sglang/srt/server_args.py", 2453, "_handle_mamba_radix_cache")
    assert err["step"] == "_handle_model_specific_adjustments"
    f = rep["fields"]["mamba_scheduler_strategy"]
    assert set(f) == FIELD_KEYS
    assert (f["value"], f["default"], f["given"], f["source"]) == ("no_buffer", "auto", None, "derived")
    assert f["writes"][0]["old"] == "auto" and f["writes"][0]["function"] == "_handle_missing_default_values"
    assert rep["fields"]["max_running_requests"]["source"] == "cli"


def test_working_edit_passes_and_shows_sources_on_0_5_23():
    rep = resolve("0.5.23", demo.working_argv("0.5.23"))
    assert rep["ok"] is True and rep["error"] is None
    f = rep["fields"]
    assert (f["mamba_radix_cache_strategy"]["source"], f["mamba_radix_cache_strategy"]["option"]) == ("cli", "--mamba-radix-cache-strategy")
    assert f["max_mamba_cache_size"]["value"] == 24 and f["mamba_full_memory_ratio"]["value"] == 0.4
    assert f["speculative_algorithm"]["given"] == "NEXTN" and f["speculative_algorithm"]["value"] == "EAGLE"
    assert f["speculative_algorithm"]["source"] == "overridden"
    assert f["uses_mamba_radix_cache"]["source"] == "derived"


def test_renamed_flag_is_a_usage_error_with_a_suggestion():
    argv = demo.base_argv("0.5.23") + ["--mamba-scheduler-strategy", "extra_buffer"]
    rep = resolve("0.5.23", argv)
    assert rep["ok"] is False and rep["error"] is None
    ue = rep["usage_error"]
    assert ue["unknown_flags"] == ["--mamba-scheduler-strategy"]
    assert ue["suggestions"] == {"--mamba-scheduler-strategy": "unknown in SGLang 0.5.23; renamed "
                                                               "`--mamba-radix-cache-strategy` in 0.5.14"}
    assert ue["message"] == "sglang serve: error: unrecognized arguments: --mamba-scheduler-strategy extra_buffer"


def test_params_metadata():
    out = subprocess.run([sys.executable, "-m", "mambaconsole.sim", "--sim-version", "0.5.11", "--sim-params"],
                         capture_output=True, text=True, timeout=60, check=True)
    params = {p["dest"]: p for p in json.loads(out.stdout)}
    p = params["mamba_scheduler_strategy"]
    assert p["option_strings"] == ["--mamba-scheduler-strategy"] and p["default"] == "auto"
    assert p["choices"] == ["auto", "no_buffer", "extra_buffer"] and p["deprecated"] is False
