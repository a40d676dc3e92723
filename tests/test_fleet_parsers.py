"""The fleet's pure parts on recorded inputs: the router's (smg 1.13.0) /workers, /get_loads and
/engine_metrics (tests/data/smg, recorded from the real router), SGLang 0.5.23's /v1/loads
shape, TTFT/ITL quantiles from a real 0.5.23 /metrics, the ServerArgs diff and the
router-vs-engine disagreement rule. Expected values are read off the inputs or computed by
hand in the comments."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import SHARED
from mambaconsole.errors import ConsoleError
from mambaconsole.session.fleet import Disagreement, WorkerRow, disagreements, parse_target
from mambaconsole.sglang import latency as L
from mambaconsole.sglang import router as smg
from mambaconsole.sglang.fleet_args import diff_server_args
from mambaconsole.sglang.loads import parse_v1_loads
from mambaconsole.sglang.metrics import parse_metrics

DATA = Path(__file__).parent / "data" / "smg"
P, D = "http://127.0.0.1:31001", "http://127.0.0.1:31002"


def test_workers_pd_roles_health_version_and_engine_load():
    workers = smg.parse_workers((DATA / "workers_pd.json").read_text())
    assert [(w.url, w.role, w.healthy, w.status, w.version) for w in workers] == [
        (P, "prefill", True, "ready", "0.5.23"), (D, "decode", True, "ready", "0.5.23")]
    # engine_load.loads[0] of each entry in the file
    assert (workers[0].load.running, workers[0].load.waiting) == (4, 319)
    assert (workers[1].load.running, workers[1].load.waiting) == (4, 358)
    assert workers[0].tp_size == 1 and workers[0].dp_size == 1


def test_a_killed_worker_is_still_healthy_in_the_routers_workers():
    """15 s after the decode server exited the router still says healthy/ready; only its
    engine_load is gone."""
    workers = {w.url: w for w in smg.parse_workers((DATA / "workers_pd_killed15.json").read_text())}
    assert workers[D].healthy is True and workers[D].status == "ready"
    assert workers[D].load is None
    assert workers[P].load is not None
    assert set(smg.parse_loads((DATA / "get_loads_pd_killed.json").read_text())) == {P}
    assert set(smg.split_engine_metrics((DATA / "engine_metrics_pd_killed.txt").read_text())) == {P}


def test_get_loads_per_worker():
    loads = smg.parse_loads((DATA / "get_loads_regular.json").read_text())
    assert (loads[P].running, loads[P].waiting, loads[P].token_usage, loads[P].gen_throughput) == (4, 559, 0.5, 177.5)
    assert (loads[D].running, loads[D].waiting, loads[D].gen_throughput) == (4, 102, 193.0)


def test_engine_metrics_split_by_worker_addr():
    per = smg.split_engine_metrics((DATA / "engine_metrics_regular.txt").read_text())
    assert set(per) == {P, D}
    assert (per[P].num_running_reqs, per[P].num_queue_reqs) == (4, 569)
    assert per[D].num_queue_reqs == 113
    assert per[P].spec_accept_length == pytest.approx(2.5989225645757044)
    assert "worker_addr" not in per[P].label_names


@pytest.mark.parametrize("body", ["not json", "{}", '{"workers": [{"no_url": 1}]}', "[1]"])
def test_router_workers_bad_input_is_a_clear_error(body):
    with pytest.raises(ConsoleError, match="/workers"):
        smg.parse_workers(body)


def test_v1_loads_0_5_23_shape():
    """Keys as SGLang 0.5.23 v1_loads.py / LoadSnapshot.to_dict write them, two DP ranks."""
    body = {"timestamp": "2026-12-01T15:00:00+00:00", "version": "0.5.23", "accelerator": "NVIDIA H100 80GB HBM3",
            "num_accelerators": 1,
            "loads": [{"dp_rank": 0, "num_running_reqs": 3, "num_waiting_reqs": 7, "token_usage": 0.25,
                       "gen_throughput": 100.0, "memory": {"weight_gb": 25.5, "kv_cache_gb": 30.0, "graph_gb": 1.0,
                                                           "token_capacity": 1000},
                       "speculative": {"accept_length": 3.0, "accept_rate": 0.7}},
                      {"dp_rank": 1, "num_running_reqs": 2, "num_waiting_reqs": 1, "token_usage": 0.5,
                       "gen_throughput": 50.0, "memory": {"weight_gb": 25.5, "kv_cache_gb": 30.0, "graph_gb": 1.0,
                                                          "token_capacity": 1000},
                       "speculative": {"accept_length": 2.0, "accept_rate": 0.5}}]}
    got = parse_v1_loads(json.dumps(body))
    assert (got.version, got.dp_ranks, got.running, got.waiting) == ("0.5.23", 2, 5, 8)
    assert got.token_usage == 0.5 and got.gen_throughput == 150.0
    assert got.accept_length == 2.5
    assert (got.weight_gib, got.kv_cache_gib) == (51.0, 60.0)
    with pytest.raises(ConsoleError):
        parse_v1_loads('{"detail": "Not Found"}')


def test_ttft_quantiles_from_a_real_0_5_23_metrics():
    """qnext_metrics.txt: buckets le=0.2 → 0, le=0.4 → 2, le=0.6 → 3, count 3.
    p50: rank 1.5 in (0.2, 0.4] holding 2 → 0.2 + 0.2 × 1.5/2 = 0.35 s;
    p99: rank 2.97 in (0.4, 0.6] holding 1 → 0.4 + 0.2 × 0.97 = 0.594 s."""
    snap = parse_metrics((SHARED / "reference/cpu-sglang/real-0.5.23/qnext_metrics.txt").read_text())
    h = L.histogram(snap, L.TTFT)
    assert L.quantile(0.5, h) == pytest.approx(0.35)
    assert L.quantile(0.99, h) == pytest.approx(0.594)
    # this server exported no inter-token histogram (non-streaming requests only)
    assert L.histogram(snap, L.ITL) is None
    w = L.LatencyWindow()
    w.add(0.0, snap)
    lat = w.latency()
    assert lat.window_s is None and lat.requests == 3 and lat.itl_p50 is None


def _hist_text(name: str, counts: dict[str, float]) -> str:
    lines = [f"# TYPE {name} histogram"]
    for le, c in counts.items():
        lines.append(f'{name}_bucket{{le="{le}",model_name="m"}} {c}')
    lines.append(f'{name}_count{{model_name="m"}} {counts["+Inf"]}')
    lines.append(f'{name}_sum{{model_name="m"}} 1.0')
    return "\n".join(lines) + "\n"


def test_latency_over_the_last_minute_is_the_difference_of_two_scrapes():
    """At t=0: 100 fast first tokens (≤0.1 s). At t=70: 10 more, all in (0.5, 1.0]. The minute
    window sees only the 10: p50 = 0.5 + 0.5 × 5/10 = 0.75 s; since start p50 would be ≤ 0.1."""
    t0 = _hist_text(L.TTFT, {"0.1": 100, "0.5": 100, "1.0": 100, "+Inf": 100})
    t70 = _hist_text(L.TTFT, {"0.1": 100, "0.5": 100, "1.0": 110, "+Inf": 110})
    w = L.LatencyWindow(60.0)
    w.add(0.0, parse_metrics(t0))
    w.add(70.0, parse_metrics(t70))
    lat = w.latency()
    assert lat.window_s == 70.0 and lat.requests == 10
    assert lat.ttft_p50 == pytest.approx(0.75)
    # a rank in +Inf is answered with the highest finite bound (Prometheus' rule)
    assert L.quantile(0.99, L.Histogram(((1.0, 1), (float("inf"), 10)))) == 1.0


def test_latency_window_drops_scrapes_older_than_the_window():
    w = L.LatencyWindow(60.0)
    for t, n in ((0, 10), (30, 20), (61, 30), (95, 40)):
        w.add(float(t), parse_metrics(_hist_text(L.ITL, {"0.01": n, "+Inf": n})))
    # baseline: the newest scrape at least 60 s before t=95 is t=30 (20 obs) → 20 in the window
    lat = w.latency()
    assert lat.window_s == 65.0
    assert lat.itl_p50 == pytest.approx(0.005)


def test_latency_window_restarts_with_a_new_server():
    """A relaunch on the same port: the histograms' counts go down (a counter reset). The window
    then covers the new server alone (one scrape: since it started), never the old one's 62 s."""
    w = L.LatencyWindow(60.0)
    w.add(0.0, parse_metrics(_hist_text(L.TTFT, {"0.1": 50, "1.0": 80, "+Inf": 80})))
    w.add(40.0, parse_metrics(_hist_text(L.TTFT, {"0.1": 50, "1.0": 90, "+Inf": 90})))
    w.add(62.0, parse_metrics(_hist_text(L.TTFT, {"0.1": 3, "1.0": 3, "+Inf": 3})))  # the new server
    lat = w.latency()
    assert lat.window_s is None and lat.requests == 3
    assert lat.ttft_p50 == pytest.approx(0.1 * 1.5 / 3)  # rank 1.5 of 3 in (0, 0.1]


def test_mismatched_ssm_dtype_between_prefill_and_decode_is_the_first_difference():
    base = {"model_path": "Qwen/Qwen3.6-27B", "page_size": 1, "kv_cache_dtype": "auto", "tp_size": 1,
            "port": 30000, "chunked_prefill_size": 8192, "mamba_ssm_dtype": "float32",
            "max_mamba_cache_size": 24}
    prefill = dict(base, chunked_prefill_size=4096, port=30001, disaggregation_mode="prefill")
    decode = dict(base, mamba_ssm_dtype="bfloat16", page_size=16, max_mamba_cache_size=None, port=30002,
                  disaggregation_mode="decode")
    diffs = diff_server_args([("d", "decode", decode), ("p", "prefill", prefill)])
    assert [(d.field, d.matters) for d in diffs] == [
        ("mamba_ssm_dtype", True), ("page_size", True), ("max_mamba_cache_size", True), ("chunked_prefill_size", False)]
    assert dict(diffs[0].values) == {"p": "float32", "d": "bfloat16"}
    assert list(dict(diffs[0].values)) == ["p", "d"]  # the prefill side first


def test_replicas_any_difference_and_per_instance_fields_ignored():
    a = {"port": 1, "host": "a", "random_seed": 5, "schedule_policy": "fcfs", "mem_fraction_static": 0.9}
    b = {"port": 2, "host": "b", "random_seed": 7, "schedule_policy": "lpm", "mem_fraction_static": 0.9}
    diffs = diff_server_args([("a", "regular", a), ("b", "regular", b), ("c", "regular", None)])
    assert [(d.field, d.between) for d in diffs] == [("schedule_policy", "regular replicas")]


def test_disagreement_rule():
    row = WorkerRow(url=D, role="decode", router_health="healthy", engine_health="dead", engine_detail="connection refused")
    assert disagreements(row, None, "0.5.23") == [Disagreement(D, "health", "healthy", "dead (connection refused)")]
    row = WorkerRow(url=D, role="decode", router_health="unhealthy", engine_health="healthy",
                    version="0.5.24", version_source="engine")
    assert [d.what for d in disagreements(row, "regular", "0.5.23")] == ["health", "role", "version"]
    # no router: nothing to disagree with
    assert disagreements(WorkerRow(url="h:1", router_health=None, engine_health="dead"), "regular", None) == []


@pytest.mark.parametrize("text,kind", [("http://127.0.0.1:30000", "router"), ("gpu-node", "host"), ("local", "host")])
def test_targets(text, kind):
    assert parse_target(text).kind == kind


@pytest.mark.parametrize("text,message", [("some/path", "not a router URL"), ("http://h:99999", "not a valid port"),
                                          ("http://h:x", "not a valid port"), ("http://:30000", "needs a host")])
def test_bad_target_is_a_clear_error(text, message):
    with pytest.raises(ConsoleError, match=message):
        parse_target(text)


def test_worker_url_to_host():
    from mambaconsole.session.fleet import Fleet, Target

    f = Fleet([Target("router", url="http://r:1")], hosts={"gpu-a": 30000, "gpu-b": 31000})
    assert f.host_for("http://gpu-a:30000") == "gpu-a"
    assert f.host_for("http://gpu-a:30001") is None  # that host's server is on another port
    assert f.host_for("http://10.0.0.7:30000") is None
    assert f.host_for("http://127.0.0.1:31001") == "local"  # a loopback worker seen from here
    via = Fleet([Target("router", url="http://r:1")], hosts={}, via="gpu-node")
    assert via.host_for("http://127.0.0.1:31001") == "gpu-node"
