"""The simulator against a real SGLang 0.5.23 server: for the argv the real hybrid server ran
(../shared/reference/cpu-sglang/real-0.5.23/: its /server_info, /metrics and log, committed
real output), the simulated 0.5.23 server's /server_info key sets, /metrics names, endpoints and
log line formats match the real ones (formats and key sets, not memory values), and every key and
name the console reads is in the real output."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import httpx
import pytest
from conftest import SHARED
from mambaconsole.sglang.server_info import parse_server_info

REAL = SHARED / "reference" / "cpu-sglang" / "real-0.5.23"

pytestmark = pytest.mark.skipif(not REAL.is_dir(), reason=f"reference output not found: {REAL}")

#: the real hybrid server's argv (its log's server_args dump), on the sim's model; the sim has no
#: --device/--load-format/--attention-backend of a CPU server to vary, so those stay out
ARGV = ["--model-path", "Qwen/Qwen3.6-27B", "--host", "127.0.0.1", "--max-total-tokens", "4096",
        "--context-length", "2048", "--enable-metrics", "--mamba-radix-cache-strategy", "no_buffer",
        "--disable-overlap-schedule", "--max-mamba-cache-size", "32", "--max-running-requests", "8",
        "--log-level", "info"]


#: tests/data/loads/ (README there): real /v1/loads answers of a plain Qwen3 CPU server
LOADS = Path(__file__).parent / "data" / "loads"
#: recorded file -> the query it answers (status.json holds the same paths)
LOADS_STATUS = json.loads((LOADS / "status.json").read_text())
LOADS_QUERIES = {name: rec["path"] for name, rec in LOADS_STATUS.items()}


def _names(text: str) -> set[str]:
    return {ln.split("{")[0].split(" ")[0] for ln in text.splitlines() if ln and not ln.startswith("#")}


@pytest.fixture(scope="module")
def sim_answers(tmp_path_factory):
    import os
    import socket
    import subprocess
    import sys
    import time

    d = tmp_path_factory.mktemp("sim")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, MAMBACONSOLE_SIM_GPU_FILE=str(d / "gpu.json"))
    with open(d / "log", "w") as log:
        p = subprocess.Popen([sys.executable, "-m", "mambaconsole.sim", "--sim-version", "0.5.23", "--sim-speed", "20",
                              *ARGV, "--port", str(port)], stdout=log, stderr=log, env=env, cwd=d)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(base + "/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        out = {"info": httpx.get(base + "/server_info").json(), "metrics": httpx.get(base + "/metrics").text,
               "codes": {ep: httpx.get(base + ep).status_code for ep in
                         ("/health", "/health_generate", "/server_info", "/get_server_info", "/model_info",
                          "/get_model_info", "/v1/models", "/metrics")},
               "models": httpx.get(base + "/v1/models").json()}
        # the real answers were read after one request had been served: the same here
        # (a sim without /v1/loads: its tests fail on the recorded statuses, the others still run)
        deadline = time.monotonic() + 60
        while (r := httpx.get(base + "/v1/loads")).status_code == 200 and r.json()["loads"][0]["decode_moments"] is None:
            assert time.monotonic() < deadline, "the sim served no decode step"
            time.sleep(0.2)
        out["metrics_before_loads"] = httpx.get(base + "/metrics").text
        out["loads"] = {name: httpx.get(base + query) for name, query in LOADS_QUERIES.items()}
        out["metrics_after_loads"] = httpx.get(base + "/metrics").text
        time.sleep(0.5)
        out["log"] = (d / "log").read_text()
        return out
    finally:
        p.terminate()
        p.wait(30)


def test_server_info_top_level_keys_match_the_real_server(sim_answers):
    real = json.loads((REAL / "qnext_server_info.json").read_text())
    sim = sim_answers["info"]
    assert set(sim) == set(real), (sorted(set(sim) - set(real)), sorted(set(real) - set(sim)))
    assert "cuda_graph_max_bs" not in sim  # no 0.5.23 ServerArgs field
    assert sim["hicache_object_layout"].keys() == real["hicache_object_layout"].keys()


def test_internal_state_keys_are_the_real_servers(sim_answers):
    real = json.loads((REAL / "qnext_server_info.json").read_text())["internal_states"][0]
    sim = sim_answers["info"]["internal_states"][0]
    # the sim may leave out what the real scheduler adds; it invents no key
    extra = set(sim) - set(real)
    # custom_sigquit_handler: a ServerArgs field the real scheduler's copy leaves out (a callable)
    assert extra <= {"custom_sigquit_handler"}, sorted(extra)
    assert sim["memory_usage"].keys() == real["memory_usage"].keys()


def test_metrics_names_are_the_real_servers(sim_answers):
    real = _names((REAL / "qnext_metrics.txt").read_text())
    sim = _names(sim_answers["metrics"])
    # the real server was asked once: no request had tokens in flight long enough for ITL buckets
    assert sim - real <= {n for n in sim if n.startswith("sglang:inter_token_latency_seconds")}, sorted(sim - real)
    assert not [n for n in sim if n.endswith("_created")]


def test_endpoints_the_real_server_serves(sim_answers):
    assert all(code == 200 for code in sim_answers["codes"].values()), sim_answers["codes"]
    card = sim_answers["models"]["data"][0]
    assert set(card) == {"id", "object", "created", "owned_by", "root", "parent", "max_model_len"}  # ModelCard
    assert card["max_model_len"] == 2048


def test_log_line_formats_are_the_real_servers(sim_answers):
    """The lines the console reads, in the real hybrid log's format: the same words and fields,
    numbers aside (dates, sizes, counts replaced by #)."""
    def shape(line: str) -> str:
        line = re.sub(r"^\[[^\]]*\] ", "", line)
        # the device's words: the sim models a GPU node, the real server ran on CPU
        line = line.replace("cpu graph:", "cuda graph:").replace("available_cpu_mem", "available_gpu_mem")
        return re.sub(r"-?\d+(\.\d+)?", "#", line)

    real = (REAL / "qnext_server.log").read_text().splitlines()
    sim = sim_answers["log"].splitlines()
    for head in ("Prefill batch, ", "The server is fired up and ready to roll!", "Load weight end.",
                 "max_total_num_tokens=", "Mamba Cache is allocated."):
        r = [shape(ln) for ln in real if head in ln]
        s = [shape(ln) for ln in sim if head in ln]
        assert r and s, head
        if head == "Mamba Cache is allocated.":
            # the sim's model has speculative caches only with speculative decoding: same head fields
            assert s[0].split(" conv_state")[0] == r[0].split(" conv_state")[0], (s[0], r[0])
            continue
        if head == "Load weight end.":
            continue  # the CPU server's weights line has no GPU memory fields
        assert s[0] == r[0], (head, s[0], r[0])


def test_every_server_info_key_the_console_reads_is_in_the_real_answer():
    """The console's reader on the real answer: each value it takes, compared with the real JSON
    read here independently."""
    real = json.loads((REAL / "qnext_server_info.json").read_text())
    internal = real["internal_states"][0]
    info = parse_server_info(real)
    assert info.version == real["version"] == "0.5.23"
    assert info.status == real["status"]
    assert info.max_total_num_tokens == real["max_total_num_tokens"]
    assert info.launch_command == real["launch_command"]
    assert internal["effective_max_running_requests_per_dp"] == 8
    assert internal["last_gen_throughput"] > 0
    for k in ("weight", "kvcache", "token_capacity", "token_capacity_swa", "graph", "startup_available"):
        assert k in internal["memory_usage"], k


def test_every_metric_the_console_reads_is_in_the_real_output():
    from mambaconsole.sglang import metrics as M

    real = _names((REAL / "qnext_metrics.txt").read_text())
    tables = [v for v in vars(M).values() if isinstance(v, dict) and v
              and all(isinstance(x, tuple) and str(x[0]).startswith("sglang:") for x in v.values())]
    assert tables
    missing = [(key, name) for t in tables for key, (name, _ver) in t.items() if name not in real]
    assert missing == []


def test_the_sim_reports_its_disaggregation_mode(sim_process, free_port):
    """--disaggregation-mode is what /server_info says, top level and the scheduler's copy (the
    sim said "null" there whatever was given)."""
    run = sim_process("0.5.23", [*ARGV, "--port", str(free_port), "--disaggregation-mode", "prefill"])
    run.wait_for("The server is fired up and ready to roll!", timeout=120)
    info = httpx.get(f"http://127.0.0.1:{free_port}/server_info", timeout=10).json()
    assert info["disaggregation_mode"] == "prefill"
    assert info["internal_states"][0]["disaggregation_mode"] == "prefill"


def _shape(value):
    """A JSON value's shape: dicts by key (recursively), lists by their items' shapes, numbers as
    "number" (SGLang prints an int-valued float as 0.0), strings, null and bools by type."""
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shape(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return type(value).__name__
    return "number"


def test_v1_loads_answers_have_the_real_servers_status_and_type(sim_answers):
    """Every recorded query (JSON, include, dp_rank in and out of range, bad include, bad
    dp_rank, prometheus) answers with the real server's status and content type (the old sim:
    404 on all)."""
    got = {name: (r.status_code, r.headers["content-type"]) for name, r in sim_answers["loads"].items()}
    assert got == {name: (rec["status"], rec["content_type"]) for name, rec in LOADS_STATUS.items()}


def test_v1_loads_json_has_the_real_keys_and_shapes(sim_answers):
    """Top level and each rank, key sets and value shapes recursively, for every JSON query.
    The real rank has no speculative or lora section (plain model, no adapters), nor has the
    sim's without speculative decoding; accelerator is a name on the sim's GPU, null on CPU."""
    for name, r in sim_answers["loads"].items():
        if not name.endswith(".json") or LOADS_STATUS[name]["status"] != 200:
            continue
        real, sim = json.loads((LOADS / name).read_text()), r.json()
        assert real["accelerator"] is None and isinstance(sim["accelerator"], str), name
        real["accelerator"] = sim["accelerator"] = None
        assert _shape(sim) == _shape(real), name
        assert [list(x) for x in sim["loads"]] == [list(x) for x in real["loads"]], name  # key order too


def test_v1_loads_error_answers_are_the_real_servers(sim_answers):
    loads = sim_answers["loads"]
    assert loads["v1_loads_bad_include.txt"].text == (LOADS / "v1_loads_bad_include.txt").read_text()
    real = json.loads((LOADS / "v1_loads_bad_dp_rank.json").read_text())
    sim = loads["v1_loads_bad_dp_rank.json"].json()
    assert sim.keys() == real.keys()
    assert {k: sim[k] for k in ("object", "type", "param", "code")} == \
        {k: real[k] for k in ("object", "type", "param", "code")}

    def words(message: str) -> str:  # the message without the site-packages folder it names
        return re.sub(r'File "[^"]*/sglang/', 'File "/sglang/', message)

    assert words(sim["message"]) == words(real["message"])


def test_v1_loads_prometheus_has_the_real_names_and_labels(sim_answers):
    """The same gauges in the same order, each with one dp_rank-labelled sample per rank; values
    are the sim's own, read with prometheus_client's parser (it must accept both)."""
    from prometheus_client.parser import text_string_to_metric_families

    def families(text: str) -> list[tuple[str, str, list[dict]]]:
        return [(f.name, f.type, [s.labels for s in f.samples]) for f in text_string_to_metric_families(text)]

    for name, r in sim_answers["loads"].items():
        if not name.endswith(".txt") or LOADS_STATUS[name]["status"] != 200:
            continue
        assert families(r.text) == families((LOADS / name).read_text()), name


def test_the_consoles_loads_reader_reads_the_sim_as_the_real(sim_answers):
    """sglang/loads.py on the real answer and on the sim's: the same fields filled (values are
    each server's own), each compared with the JSON read here independently."""
    from dataclasses import asdict

    from mambaconsole.sglang.loads import parse_v1_loads

    real_json = json.loads((LOADS / "v1_loads.json").read_text())
    sim_json = sim_answers["loads"]["v1_loads.json"].json()
    real, sim = parse_v1_loads(real_json), parse_v1_loads(sim_answers["loads"]["v1_loads.json"].text)
    for parsed, raw in ((real, real_json), (sim, sim_json)):
        rank = raw["loads"][0]
        assert parsed.version == raw["version"] == "0.5.23"
        assert parsed.dp_ranks == len(raw["loads"]) == 1
        assert parsed.running == rank["num_running_reqs"] and parsed.waiting == rank["num_waiting_reqs"]
        assert parsed.token_usage == rank["token_usage"]
        assert parsed.kv_cache_gib == rank["memory"]["kv_cache_gb"]
        assert parsed.weight_gib == rank["memory"]["weight_gb"]
    # the same fields absent: accelerator on CPU aside (the sim's GPU has a name)
    missing = lambda p: {k for k, v in asdict(p).items() if v is None} - {"accelerator"}
    assert missing(sim) == missing(real) == {"accept_length"}


def _struct_fields(source: str) -> dict[str, list[str]]:
    """Each class of a Python file -> its annotated fields, in order (a msgspec Struct's)."""
    import ast

    return {node.name: [s.target.id for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)]
            for node in ast.parse(source).body if isinstance(node, ast.ClassDef)}


def test_v1_loads_with_speculative_decoding_has_sglangs_fields(sim_process, free_port):
    """With speculative decoding (which the recorded CPU server could not run) the sim's rank
    has the speculative section too: every section's keys, and the rank's, are the fields of
    0.5.23's structs (srt/managers/load_snapshot.py, read from the installed SGLang, not the
    sim); lora stays out (the sim serves no adapters)."""
    from fixtures.sglang_venvs import sglang_python
    from mambaconsole.sim.demo import working_argv

    site = sglang_python("0.5.23").parent.parent / "lib"
    source = next(site.glob("python*/site-packages/sglang/srt/managers/load_snapshot.py")).read_text()
    structs = _struct_fields(source)
    sections = {"memory": "MemoryMetrics", "speculative": "SpeculativeMetrics", "lora": "LoRAMetrics",
                "disaggregation": "DisaggregationMetrics", "queues": "QueueMetrics"}

    run = sim_process("0.5.23", working_argv("0.5.23", port=free_port), speed=50)
    run.wait_for("The server is fired up and ready to roll!", timeout=120)
    url = f"http://127.0.0.1:{free_port}/v1/loads"
    deadline = time.monotonic() + 60
    while "speculative" not in (rank := httpx.get(url, timeout=10).json()["loads"][0]):
        assert time.monotonic() < deadline, sorted(rank)
        time.sleep(0.2)
    assert list(rank) == [f for f in structs["LoadSnapshot"] if f != "lora"]
    for field, struct in sections.items():
        if field != "lora":
            assert list(rank[field]) == structs[struct], field
    assert 1.0 <= rank["speculative"]["accept_length"] <= 4  # --speculative-num-draft-tokens 4
    assert 0.0 <= rank["speculative"]["accept_rate"] <= 1.0
    only_spec = httpx.get(url + "?include=spec", timeout=10).json()["loads"][0]
    assert set(only_spec) - set(structs["LoadSnapshot"]) == set() and "speculative" in only_spec
    assert not {"memory", "queues", "disaggregation"} & set(only_spec)


def test_v1_loads_calls_are_timed_in_metrics_as_the_real_server_times_them(sim_answers):
    """After the recorded queries /metrics has 0.5.23's /v1/loads duration histogram, with the
    real one's labels and buckets and one observation per query the handler ran (all but the
    dp_rank FastAPI refused: the real count is read off its recorded /metrics)."""
    from prometheus_client.parser import text_string_to_metric_families

    def histogram(text: str) -> tuple[set, list, float]:
        fam = next(f for f in text_string_to_metric_families(text) if f.name == "sglang:get_loads_duration_seconds")
        labels = {k for s in fam.samples for k in s.labels}
        buckets = [s.labels["le"] for s in fam.samples if s.name.endswith("_bucket")]
        count = next(s.value for s in fam.samples if s.name.endswith("_count"))
        return labels, buckets, count

    real = histogram((LOADS / "metrics_after_loads.txt").read_text())
    assert real[2] == sum(1 for rec in LOADS_STATUS.values() if rec["status"] != 400)
    sim, before = histogram(sim_answers["metrics_after_loads"]), histogram(sim_answers["metrics_before_loads"])
    assert sim[:2] == real[:2]
    assert sim[2] - before[2] == real[2]  # the fixture's own /v1/loads calls before the recorded ones aside
    assert "get_loads_duration" not in sim_answers["metrics"]  # before any /v1/loads call: none, as the real
