"""Record a real SGLang 0.5.23 ``GET /v1/loads`` (JSON and ``format=prometheus``) from a CPU server.

Run from the repository root with the test venv: ``.venv/bin/python tests/data/loads/record.py``.
It starts the plain ``qwen3-tiny`` through ``tests/fixtures/real_sglang.py`` (``mambaconsole
launch`` over the loopback sshd, bounded pools), sends one request, saves the answers next to
this file (and ``/metrics`` after them) and stops the server.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))  # tests/

from fixtures.real_sglang import QWEN3_ARGS, real_node


def main() -> None:
    with real_node() as node:
        run = node.launch("qwen3-tiny", QWEN3_ARGS)
        try:
            run.generate("Hello world", max_new_tokens=16)
            answers = {
                "v1_loads.json": ("/v1/loads", "json"),
                "v1_loads_core.json": ("/v1/loads?include=core", "json"),
                "v1_loads_memory.json": ("/v1/loads?include=memory,queues", "json"),
                "v1_loads_dp_rank_0.json": ("/v1/loads?dp_rank=0", "json"),
                "v1_loads_dp_rank_1.json": ("/v1/loads?dp_rank=1", "json"),
                "v1_loads_bad_include.txt": ("/v1/loads?include=bogus", "text"),
                "v1_loads_bad_dp_rank.json": ("/v1/loads?dp_rank=x", "json"),
                "v1_loads_prometheus.txt": ("/v1/loads?format=prometheus", "text"),
                "v1_loads_prometheus_core.txt": ("/v1/loads?format=prometheus&include=core", "text"),
                "v1_loads_prometheus_dp_rank_1.txt": ("/v1/loads?format=prometheus&dp_rank=1", "text"),
            }
            status = {}
            for name, (path, kind) in answers.items():
                r = run.get(path)
                status[name] = {"path": path, "status": r.status_code,
                                "content_type": r.headers.get("content-type")}
                text = json.dumps(r.json(), indent=1) + "\n" if kind == "json" else r.text
                (HERE / name).write_text(text)
            (HERE / "status.json").write_text(json.dumps(status, indent=1) + "\n")
            # /metrics after the /v1/loads calls above: the endpoint's own duration histogram
            (HERE / "metrics_after_loads.txt").write_text(run.get("/metrics").text)
            (HERE / "argv.json").write_text(json.dumps(run.argv, indent=1) + "\n")
        finally:
            node.stop(run)


if __name__ == "__main__":
    main()
