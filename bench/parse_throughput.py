"""Log parser throughput: 1,000,000 mixed real-format SGLang log lines.

Writes the lines to a temp file, then in the same run times
  - the baseline: ``for line in f: pass`` over the file;
  - the parser: ``LogParser.feed_many(chunk)`` over 64 KiB chunks of lines plus ``flush()``
    (what ``feed(line)`` does per line): every line
    decoded, control-stripped, its envelope split, classified into a typed event, wrapped
    lines and tracebacks joined (the measure behind the goal);
  - for information, the same plus reading the typed fields the console shows from every
    batch event (``fields`` is split on first access; running, queue, token usage, accept
    len, gen throughput).
Goal: parsing costs at most 15x the bare loop. Last line:
``parse_throughput: ratio = X (goal <= 15) PASS|FAIL``.
"""

from __future__ import annotations

import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tui"))

from mambaconsole.sglang.events import BatchLine, DecodeBatch, LogParser  # noqa: E402

N = 1_000_000
GOAL = 15.0

# (weight, line template) — formats from shared/reference/sglang-observables.md (SGLang's
# envelope carries no level; some builds add "WARNING file:line:", case-09). The mix is
# a debug-level flood: mostly debug lines of SGLang's modules and request traces, batch lines,
# uvicorn access lines from pollers; startup lines, progress bars and tracebacks (each format
# present, at the small share they have in a long flood).
TEMPLATES = [
    (25, "[{ts} TP0] Decode batch, #running-req: {a}, #full token: {b}, full token usage: 0.{c:02d}, mamba num: {a}, mamba usage: 0.{d:02d}, accept len: 2.{c:02d}, accept rate: 0.{d:02d}, cuda graph: True, gen throughput (token/s): {b}.44, #queue-req: {e}"),
    (5, "[{ts} TP0] Decode batch, #running-req: {a}, #token: {b}, token usage: 0.{c:02d}, cuda graph: True, gen throughput (token/s): 1523.44, #queue-req: 0, "),
    (12, "[{ts} TP0] Prefill batch, #new-seq: 1, #new-token: {b}, #cached-token: {a}, full token usage: 0.{c:02d}, mamba usage: 0.{d:02d}, #running-req: {a}, #queue-req: {e}, #pending-token: 0, cuda graph: False, input throughput (token/s): {b}.78"),
    (10, '[{ts}] INFO:     127.0.0.1:{b} - "GET /metrics HTTP/1.1" 200 OK'),
    (33, "[{ts} DP1 TP1 EP1] schedule step: running={a}, waiting={e}, new_token_ratio=0.{c:02d}"),
    (2, "[{ts}] WARNING model_config.py:1098: Transformers version 5.3.0 is used for model type qwen3_5_moe."),
    (9, "[{ts}] Receive: obj=GenerateReqInput(rid='{b}', text=None, input_ids=[{a}, {c}, {d}], sampling_params={{'max_new_tokens': {b}}})"),
    (0.5, "[{ts} TP0] Load weight end. elapsed=12.40 s, type=Qwen3NextForCausalLM, avail mem=99.12 GB, mem usage=40.18 GB."),
    (0.5, "[{ts} TP0] KV Cache is allocated. dtype: torch.bfloat16, #tokens: {b}, K size: 11.77 GB, V size: 11.77 GB"),
    (0.5, "[{ts} TP0] Mamba Cache is allocated. max_mamba_cache_size: 512, conv_state size: 0.44GB, ssm_state size: 13.50GB "),
    (0.5, "[{ts} TP0] Capture target verify CUDA graph end. elapsed=25.31 s, mem usage=1.20 GB, avail mem=20.90 GB."),
    (0.5, "[{ts} TP0] Scheduler hit an exception: Traceback (most recent call last):\n  File \"/x/scheduler.py\", line 3277, in run_scheduler_process\n    self.event_loop()\nRuntimeError: boom {a}"),
    (1, "Capturing batches (bs=1 avail_mem=17.76 GB): 100%|██████████| 21/21 [03:21<00:00,  9.59s/it]"),
]


def generate(path: Path) -> int:
    rng = random.Random(1234)
    weights = [w for w, _ in TEMPLATES]
    tmpls = [t for _, t in TEMPLATES]
    n = 0
    with open(path, "w", encoding="utf-8") as f:
        while n < N:
            t = rng.choices(tmpls, weights)[0]
            s = t.format(ts=f"2026-10-01 12:{n // 60000 % 60:02d}:{n // 1000 % 60:02d}",
                         a=rng.randrange(1, 64), b=rng.randrange(100, 99999), c=rng.randrange(100),
                         d=rng.randrange(100), e=rng.randrange(10))
            lines = s.split("\n")[: N - n]
            f.write("\n".join(lines) + "\n")
            n += len(lines)
    return n


def bare(path: Path) -> float:
    t = time.process_time()
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            pass
    return time.process_time() - t


def parse(path: Path) -> tuple[float, int]:
    t = time.process_time()
    p = LogParser()
    feed_many = p.feed_many
    count = 0
    with open(path, encoding="utf-8", errors="replace") as f:
        while True:
            lines = f.readlines(1 << 16)   # how a tail reads: chunks of whole lines
            if not lines:
                break
            count += len(feed_many(lines))
        count += len(p.flush())
    return time.process_time() - t, count


def parse_and_read(path: Path) -> float:
    t = time.process_time()
    p = LogParser()
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            for e in p.feed(line):
                if isinstance(e, BatchLine):
                    e.fields, e.running, e.queue, e.token_usage
                    if type(e) is DecodeBatch:
                        e.accept_len, e.gen_throughput
        p.flush()
    return time.process_time() - t


def main() -> int:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "server.log"
        n = generate(path)
        size = os.path.getsize(path)
        # interleaved, best of 3 each: both sides see the same machine load
        bases, parses = [], []
        for _ in range(3):
            bases.append(bare(path))
            parses.append(parse(path))
        base = min(bases)
        took, events = min(parses)
        full = parse_and_read(path)
    ratio = took / base
    print(f"lines: {n}, bytes: {size}, events: {events}")
    print(f"bare loop: {base:.3f} s ({n / base:,.0f} lines/s)")
    print(f"parser:    {took:.3f} s ({n / took:,.0f} lines/s)")
    print(f"parser + typed batch fields: {full:.3f} s (ratio {full / base:.1f}, information only)")
    verdict = "PASS" if ratio <= GOAL else "FAIL"
    print(f"parse_throughput: ratio = {ratio:.1f} (goal <= {GOAL:g}) {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
