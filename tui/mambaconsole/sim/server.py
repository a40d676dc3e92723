"""The simulated SGLang server process (``python -m mambaconsole.sim``).

Seen from outside it behaves like ``python -m sglang.launch_server`` of the chosen version:
it parses SGLang's flags, resolves them, logs the startup with that version's wording, fails
the way SGLang fails (argparse exit 2, validation traceback exit 1, scheduler CUDA OOM
followed by the SIGQUIT chain and a self-SIGKILL, status 137) or reaches ready, then serves
HTTP and logs batch lines. Times are scaled by ``--sim-speed``.

Ground truth for tests (``--sim-truth PATH`` or ``$MAMBACONSOLE_SIM_TRUTH``): a JSON file,
rewritten atomically at each change, with the version, the outcome (``ready``, ``oom``,
``not_enough_memory``, ``mamba_too_small``, ``validation_error``, ``arg_error``), the exit status, the memory
plan (bytes) and every accept length printed.

Paths it shows: its traceback frames name SGLang's files under this python's site-packages, as
a real server's do, or under ``$MAMBACONSOLE_SIM_SITE_PACKAGES`` when set (the README's
screenshots use a neutral one); the GPU readings' process command line is the process's own
(``sys.orig_argv``, what ``/proc/PID/cmdline`` holds), as the node agent reads a real one.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from mambaconsole.sim import flags as simflags
from mambaconsole.sim.frames import (
    GRAPH_CAPTURE_FAILED_MSG, graph_capture_frames, mamba_too_small_frames, not_enough_memory_frames, oom_frames,
)
from mambaconsole.sim.dist import DEFAULT_TIMEOUT_S, DistTimeout, Rendezvous, dist_frames
from mambaconsole.sim.gpu import ENV_GPU_FILE, gpu_state, write_atomic
from mambaconsole.sim.logs import LogWriter, decode_line, gb, prefill_line, render_traceback, torch_size
from mambaconsole.sim.memory import CONTEXT_BYTES, MemoryPlan, plan_memory
from mambaconsole.sim.model import GiB, QWEN36_27B, HybridModel, SimGPU
from mambaconsole.sim.resolve import Failure, Resolved, resolve

ENV_TRUTH = "MAMBACONSOLE_SIM_TRUTH"
#: the site-packages folder the traceback frames name instead of this python's own
ENV_SITE = "MAMBACONSOLE_SIM_SITE_PACKAGES"
DEFAULT_GPU = "RTX PRO 6000 Blackwell,96"

#: nominal durations of the startup phases, seconds at --sim-speed 1
PHASES = {"dist": 1.0, "weights": 6.0, "pools": 1.0, "graphs": 3.0, "warmup": 1.0}
#: simulated seconds between two decode lines at --sim-speed 1 (40 forward steps)
DECODE_INTERVAL = 2.0
#: prefill speed of the simulated GPU (tokens/s), for the time to first token
PREFILL_TOKENS_PER_S = 8000.0
#: SGLang's default histogram buckets (observability/metrics_collector.py), seconds
TTFT_BUCKETS = (0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400)
ITL_BUCKETS = (0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035, 0.040, 0.060, 0.080,
               0.100, 0.200, 0.400, 0.600, 0.800, 1.000, 2.000, 4.000, 6.000, 8.000)


def sim_arg_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m mambaconsole.sim",
        description="A simulated SGLang server (no GPU): SGLang's flags, logs, HTTP endpoints and memory.",
        allow_abbrev=False,
        add_help=False,
    )
    p.add_argument("--sim-version", default="0.5.11", choices=simflags.VERSIONS, help="SGLang version to simulate")
    p.add_argument("--sim-gpu", default=DEFAULT_GPU, help='"NAME,GIB" of the simulated GPU (default: %(default)s)')
    p.add_argument("--sim-seed", type=int, default=0, help="seed of the workload and accept-length process")
    p.add_argument("--sim-speed", type=float, default=1.0, help="time scale: 10 runs ten times faster")
    p.add_argument("--sim-gpu-file", default=None, help=f"GPU readings file (default ${ENV_GPU_FILE} or ./sim-gpu.json)")
    p.add_argument("--sim-truth", default=None, help=f"ground-truth JSON for tests (default ${ENV_TRUTH})")
    p.add_argument("--sim-resolve", action="store_true",
                   help="print the pre-flight resolve JSON of SGLANG_ARGS (mambaconsole resolve --json shape) and exit")
    p.add_argument("--sim-params", action="store_true", help="print the simulated parser's option metadata as JSON and exit")
    p.add_argument("--sim-facts", action="store_true",
                   help="print the node facts a memory plan reads (mambaconsole.agent.node_facts' JSON) and exit")
    p.add_argument("--sim-help", action="help", help="show the simulator's own options")
    return p


def _site_packages() -> str:
    """The folder the traceback frames name: ``$MAMBACONSOLE_SIM_SITE_PACKAGES``, else this
    python's ``<prefix>/lib/pythonX.Y/site-packages`` (where SGLang would be installed)."""
    return (os.environ.get(ENV_SITE) or "").rstrip("/") or \
        f"{sys.prefix}/lib/python{sys.version_info.major}.{sys.version_info.minor}/site-packages"


class SimServer:
    """One simulated server run."""

    def __init__(self, sim: argparse.Namespace, sglang_argv: list[str], model: HybridModel = QWEN36_27B):
        self.version: str = sim.sim_version
        self.gpu = SimGPU.parse(sim.sim_gpu)
        self.seed = sim.sim_seed
        self.speed = max(sim.sim_speed, 1e-3)
        gpu_file = sim.sim_gpu_file or os.environ.get(ENV_GPU_FILE) or os.environ.get("MAMBACONSOLE_SIM_GPU")
        self.gpu_file = Path(gpu_file) if gpu_file else Path.cwd() / "sim-gpu.json"
        truth = sim.sim_truth or os.environ.get(ENV_TRUTH)
        self.truth_file = Path(truth) if truth else None
        self.argv = sglang_argv
        self.model = model
        self.site = _site_packages()
        self.log = LogWriter(sys.stderr)
        self.pid = os.getpid()
        # /proc/PID/cmdline as the node agent joins it (node_agent._cmdline_text): the argv as started
        self.cmdline = " ".join(getattr(sys, "orig_argv", None) or [sys.executable, "-m", "mambaconsole.sim", *sys.argv[1:]])
        self.used_bytes = 0
        self.utilization = 0
        self.ready = False
        self.resolved: Resolved | None = None
        self.plan: MemoryPlan | None = None
        self.metrics_enabled = False
        self.truth: dict[str, Any] = {"version": self.version, "outcome": None, "exit_code": None, "accept_lens": [], "decode_lines": 0}
        self.stats = {"running": 0, "queue": 0, "gen_throughput": 0.0, "accept_len": 0.0, "accept_rate": 0.0,
                      "full_tokens": 0, "mamba_num": 0, "prompt_tokens": 0, "generation_tokens": 0, "requests": 0,
                      "accept_tokens": 0.0, "forward_ct": 0, "cache_hit_rate": 0.0, "queue_tokens": 0,
                      "prefill_uncached_tokens": 0, "prefill_busy_us": 0}
        #: SGLang 0.5.23's decode step moments (scheduler.py _accumulate_decode_moment): steps, sum of
        #: batch sizes, of step times (us), of batch sizes squared, of size x time, of generated tokens
        self.decode_moments = [0.0] * 6
        self.startup = {"start": time.time()}
        self._stop = threading.Event()
        self._signal_pipe: int | None = None  # the write end of _install_signals' pipe
        self._lock = threading.Lock()
        self._latency_reg = None  # TTFT/ITL histograms, made with the first request (metrics_text)
        self._loads_reg = None  # /v1/loads duration histogram, made with the first /v1/loads call
        self.rendezvous: Rendezvous | None = None  # this rank's group, with --nnodes > 1
        self.hung = False  # a peer rank died: rank 0 waits in a collective for good

    # ---------------------------------------------------------------- helpers
    def sleep(self, seconds: float) -> None:
        if self._stop.wait(seconds / self.speed):
            raise _Stopped()

    def log_main(self, message: str) -> None:
        self.log.log(message)

    def access_log(self, line: str) -> None:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    def publish_gpu(self, *, gone: bool = False) -> None:
        state = gpu_state(
            self.gpu,
            used_bytes=0 if gone else self.used_bytes,
            utilization_pct=self.utilization,
            pid=None if gone else self.pid,
            cmdline=self.cmdline,
        )
        try:
            write_atomic(self.gpu_file, state)
        except OSError as exc:
            self.log.raw(f"mambaconsole.sim: cannot write GPU file {self.gpu_file}: {exc}")

    def write_truth(self) -> None:
        if self.truth_file is None:
            return
        with self._lock:
            data = json.loads(json.dumps(self.truth, default=str))
        write_atomic(self.truth_file, data)

    def finish(self, outcome: str, code: int) -> int:
        self.truth["outcome"] = outcome
        self.truth["exit_code"] = code
        self.write_truth()
        return code

    # ---------------------------------------------------------------- run
    def run(self) -> int:
        self.log.raw(
            f"{self.site}/sglang/launch_server.py:{54 if self.version == '0.5.11' else 71}: UserWarning: "
            "'python -m sglang.launch_server' is still supported, but 'sglang serve' is the recommended entrypoint.\n"
            "  Example: sglang serve --model-path <model> [options]\n"
            "  warnings.warn("
        )
        parser, source = simflags.build_parser(self.version)
        self.truth["parser"] = source
        try:
            namespace = parser.parse_args(self.argv)
        except SystemExit as exc:  # argparse already printed usage + error
            return self.finish("arg_error", int(exc.code or 0))
        fields = simflags.field_values(self.version, namespace)
        self.metrics_enabled = bool(fields.get("enable_metrics"))
        try:
            self.resolved = resolve(self.version, fields, self.model, self.gpu)
        except Failure as failure:
            return self._validation_failure(failure)
        r = self.resolved
        for w in r.warnings:
            self.log.log(w)
        self.truth["resolved"] = {k: r.fields.get(k) for k in (
            r.strategy_field, "disable_overlap_schedule", "disable_radix_cache", "mem_fraction_static",
            "max_running_requests", "max_mamba_cache_size", "mamba_full_memory_ratio", "speculative_algorithm",
            "speculative_num_steps", "speculative_eagle_topk", "speculative_num_draft_tokens", "chunked_prefill_size",
            "cuda_graph_max_bs", "page_size")}
        self.log.log(self._server_args_dump())
        self.plan = plan_memory(r, self.model, self.gpu)
        self.truth["memory"] = self.plan.as_dict()
        self.write_truth()
        old_handlers = self._install_signals()
        try:
            return self._startup_and_serve()
        except _Stopped:
            return self._stopped()
        finally:
            self._restore_signals(old_handlers)

    def _validation_failure(self, failure: Failure) -> int:
        if self.version != "0.5.11":
            self.log.log(f"kill_process_tree called: parent_pid={self.pid}, include_parent=False, pid={self.pid}")
        self.log.raw(render_traceback(failure.frames, f"{failure.exc_type}: {failure.message}", self.site))
        self.truth["error"] = {"type": failure.exc_type, "message": failure.message}
        return self.finish("validation_error", 1)

    def _server_args_dump(self) -> str:
        f = self.resolved.fields
        spec = simflags.load_spec(self.version)
        if spec["server_args_kind"] == "dataclass":
            inner = ", ".join(f"{x['name']}={f.get(x['name'])!r}" for x in spec["fields"] if x["repr"])
            return f"server_args=ServerArgs({inner})"
        return "server_args=" + repr({x["name"]: f.get(x["name"]) for x in spec["fields"]})

    # ---------------------------------------------------------------- startup
    def _startup_and_serve(self) -> int:
        plan, r, model = self.plan, self.resolved, self.model
        total = self.gpu.total_bytes
        t0 = time.perf_counter()
        try:
            rdv = self._rendezvous()
        except DistTimeout as exc:
            self.truth["error"] = {"type": exc.exc_line.split(":", 1)[0], "message": exc.exc_line.split(": ", 1)[1]}
            return self._scheduler_crash(render_traceback(dist_frames(self.version), exc.exc_line, self.site), "dist_error")
        if self.version == "0.5.11":
            self.log.log("Init torch distributed begin.")
        else:
            self.log.log("Init parallel begin.")
        self.sleep(PHASES["dist"])
        if rdv is not None:
            try:
                if not rdv.join():
                    raise _Stopped()
            except DistTimeout as exc:
                for line in exc.c10d_lines:
                    self.log.raw(line)
                self.truth["error"] = {"type": exc.exc_line.split(":", 1)[0], "message": exc.exc_line.split(": ", 1)[1]}
                return self._scheduler_crash(render_traceback(dist_frames(self.version), exc.exc_line, self.site), "dist_timeout")
        self.used_bytes = CONTEXT_BYTES
        self.publish_gpu()
        if self.version == "0.5.11":
            self.log.log(f"Init torch distributed ends. elapsed={time.perf_counter() - t0:.2f} s, mem usage={gb(CONTEXT_BYTES)} GB")
        else:
            self.log.log(f"Init parallel ends. elapsed={time.perf_counter() - t0:.2f} s")
            self.log.log(f"Memory baseline taken. mem usage={gb(CONTEXT_BYTES)} GB")
        free = total - self.used_bytes
        self.log.log(f"Load weight begin. avail mem={gb(free)} GB")
        t1 = time.perf_counter()
        steps = 6
        for i in range(steps):
            self.sleep(PHASES["weights"] / steps)
            self.used_bytes = CONTEXT_BYTES + model.weight_bytes * (i + 1) // steps
            self.publish_gpu()
        free = total - self.used_bytes
        self.log.log(
            f"Load weight end. elapsed={time.perf_counter() - t1:.2f} s, type={model.architecture}, "
            f"avail mem={gb(free)} GB, mem usage={gb(model.weight_bytes)} GB."
        )
        self.truth["weights_bytes"] = model.weight_bytes
        if plan.outcome == "not_enough_memory":
            # MemoryPoolConfig is built without mem_fraction_static here, so no "Current value" suffix
            exc, msg = "RuntimeError", "Not enough memory. Please try to increase --mem-fraction-static."
            if plan.error and not plan.error.startswith("RuntimeError: Not enough memory."):
                exc, _, msg = plan.error.partition(": ")  # another sizing error of the budget (0.5.23)
            self.truth["error"] = {"type": exc, "message": msg}
            return self._scheduler_crash(render_traceback(not_enough_memory_frames(self.version), f"{exc}: {msg}", self.site), "not_enough_memory")
        if self.version != "0.5.11" and plan.capped_by_mamba:
            self.log.log(
                f"max_running_requests is capped to {plan.max_running_requests} by the mamba state cache "
                f"(max_mamba_cache_size={plan.max_mamba_cache_size}, {plan.slot_ratio} state slots per request). "
                "To raise it: increase --mamba-full-memory-ratio or --max-mamba-cache-size, or halve the state "
                "size with --mamba-ssm-dtype bfloat16."
            )
        if plan.outcome == "mamba_too_small":
            msg = (
                "Hybrid (mamba/linear-attention) state cache is too small to serve any requests. "
                f"max_mamba_cache_size={plan.max_mamba_cache_size}, mamba_ratio={plan.slot_ratio}, "
                f"resulting max_num_reqs={plan.max_running_requests}. Try: (1) reduce --max-running-requests, "
                "(2) increase --mem-fraction-static, or (3) use GPUs with more memory."
            )
            self.truth["error"] = {"type": "RuntimeError", "message": msg}
            return self._scheduler_crash(render_traceback(mamba_too_small_frames(), f"RuntimeError: {msg}", self.site), "mamba_too_small")
        self.sleep(PHASES["pools"])
        done: dict[str, int] = {}
        for alloc in plan.allocations:
            if plan.failed is alloc:
                return self._oom(alloc)
            if alloc.phase == "graph":
                break
            self.used_bytes += alloc.nbytes
            done[alloc.name] = alloc.nbytes
            if alloc.name == ("intermediate_conv_window_cache" if plan.draft_tokens else "temporal_state"):
                self._log_mamba(done)
            if alloc.name == "v_buffer":
                self._log_kv()
        self.publish_gpu()
        free = total - self.used_bytes
        self.log.log(f"Memory pool end. avail mem={gb(free)} GB")
        self._capture_graphs(free)
        free = total - self.used_bytes
        self.log.log(
            f"max_total_num_tokens={plan.kv_tokens}, chunked_prefill_size={r['chunked_prefill_size']}, "
            f"max_prefill_tokens={r['max_prefill_tokens']}, max_running_requests={plan.max_running_requests}, "
            f"context_len={model.context_len}, available_gpu_mem={gb(free)} GB"
        )
        self.startup["available_gpu_mem"] = free
        if rdv is not None and rdv.node_rank >= 1:
            return self._follow(rdv)
        return self._serve()

    # ---------------------------------------------------------------- multi-node
    def _rendezvous(self) -> Rendezvous | None:
        """This rank's :class:`~mambaconsole.sim.dist.Rendezvous` for ``--nnodes`` > 1 (rank 0
        already listening at ``--dist-init-addr``), else None. Without ``--dist-init-addr`` the
        rank waits at ``--host`` and the port after ``--port`` (SGLang would pick a local port of
        its own: the nodes never meet either way)."""
        f = self.resolved.fields
        nnodes = int(f.get("nnodes") or 1)
        if nnodes <= 1:
            return None
        addr = f.get("dist_init_addr") or f"{f.get('host') or '127.0.0.1'}:{int(f.get('port') or 30000) + 1}"
        rdv = Rendezvous(nnodes=nnodes, node_rank=int(f.get("node_rank") or 0), addr=addr,
                         timeout_s=float(f.get("dist_timeout") or DEFAULT_TIMEOUT_S), stop=self._stop)
        self.rendezvous = rdv
        try:
            rdv.listen()
        except OSError as exc:  # torch's TCPStore server cannot listen (its message, torch 2.13)
            raise DistTimeout(
                "torch.distributed.DistNetworkError: The server socket has failed to listen on any local network "
                f"address. port: {rdv.port}, useIpv6: 0, code: -{exc.errno}, name: EADDRINUSE, message: "
                f"{(exc.strerror or '').lower()}") from None
        return rdv

    def _follow(self, rdv: Rendezvous) -> int:
        """A rank >= 1 after its start-up: no tokenizer, no API server; a stand-in ``/health``
        at ``--host:--port`` (0.5.23 ``srt/entrypoints/engine.py:1234-1283``,
        ``launch_dummy_health_check_server`` in ``srt/utils/common.py:3624``, which logs the
        line below at :3684; 0.5.11 ``engine.py:712-731``, ``common.py:2524``), then it blocks
        on its schedulers until stopped. Two ranks on one machine with one ``--port`` collide
        there: uvicorn's bind error, as the real server's stand-in thread would print it, and
        the rank runs on without ``/health``."""
        from mambaconsole.sim.http import serve_in_thread

        host, port = _bind_host(self.resolved["host"]), int(self.resolved["port"])
        httpd = None
        try:
            httpd = serve_in_thread(self, host, port, follower=True)
        except OSError as exc:
            # the main thread logs "started" right after starting the thread; the thread's bind fails after
            self.log.log(f"Dummy health check server started in background thread at {host}:{port}")
            self.log.raw(f"ERROR:    [Errno {exc.errno}] error while attempting to bind on address ({host!r}, {port}): "
                         f"{(exc.strerror or '').lower()}")
            self.log.log(f"Dummy health check server stopped at {host}:{port}")
        else:
            self.log.log(f"Dummy health check server started in background thread at {host}:{port}")
        self.ready = True
        self.truth["outcome"] = "follower"
        self.write_truth()
        try:
            while True:  # blocks like its schedulers (a dead rank 0 leaves it hanging in a collective)
                self.sleep(3600)
        finally:
            if httpd is not None:
                httpd.shutdown()

    def _log_mamba(self, done: dict[str, int]) -> None:
        plan = self.plan
        line = (
            f"Mamba Cache is allocated. max_mamba_cache_size: {plan.max_mamba_cache_size}, "
            f"conv_state size: {gb(done['conv_state'])}GB, ssm_state size: {gb(done['temporal_state'])}GB "
        )
        if plan.draft_tokens:
            line += (
                f"intermediate_ssm_state_cache size: {gb(done['intermediate_ssm_state_cache'])}GB "
                f"intermediate_conv_window_cache size: {gb(done['intermediate_conv_window_cache'])}GB "
            )
        self.log.log(line)
        self.publish_gpu()

    def _log_kv(self) -> None:
        plan = self.plan
        dtype = "dtype: torch.bfloat16, " if self.version != "0.5.11" else ""
        self.log.log(f"KV Cache is allocated. {dtype}#tokens: {plan.kv_tokens}, K size: {gb(plan.k_bytes)} GB, V size: {gb(plan.v_bytes)} GB")

    def _capture_graphs(self, free: int) -> None:
        plan, r = self.plan, self.resolved
        bs = _graph_batch_sizes(min(r["cuda_graph_max_bs"], max(plan.max_running_requests, 1)))
        t = time.perf_counter()
        graph = self.plan.graph_bytes
        if self.version == "0.5.11":
            self.log.log(f"Capture cuda graph begin. This can take up to several minutes. avail mem={gb(free)} GB")
        else:
            phase, per_req = ("verify", plan.draft_tokens) if plan.draft_tokens else ("decode", 1)
            self.log.log(f"Capture target {phase} CUDA graph begin. backend=full, num_tokens_per_req={per_req}, avail mem={gb(free)} GB")
        self.sleep(PHASES["graphs"])
        self.used_bytes += graph
        self.publish_gpu()
        after = self.gpu.total_bytes - self.used_bytes
        elapsed = time.perf_counter() - t
        if self.version == "0.5.11":
            self.log.log(f"Capture cuda graph end. Time elapsed: {elapsed:.2f} s. mem usage={gb(graph)} GB. avail mem={gb(after)} GB.")
        else:
            self.log.log(f"Capture target {phase} CUDA graph end. bs={bs}, elapsed={elapsed:.2f} s, mem usage={gb(graph)} GB, avail mem={gb(after)} GB.")
        self.truth["graph_bytes"] = graph

    def _oom(self, alloc) -> int:
        plan = self.plan
        free = plan.free_at_failure
        in_use = self.gpu.total_bytes - free
        by_torch = in_use - CONTEXT_BYTES
        msg = (
            f"CUDA out of memory. Tried to allocate {torch_size(alloc.nbytes)}. GPU 0 has a total capacity of "
            f"{torch_size(self.gpu.total_bytes)} of which {torch_size(free)} is free. Including non-PyTorch memory, "
            f"this process has {torch_size(in_use)} memory in use. Of the allocated memory {torch_size(by_torch)} is "
            "allocated by PyTorch, and 20.00 MiB is reserved by PyTorch but unallocated. If reserved but unallocated "
            "memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  "
            "See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
        )
        if alloc.phase == "graph":
            # SGLang wraps the capture's RuntimeError: raise Exception(f"Capture cuda graph failed: {e}\n{MSG}")
            wrapped = f"Capture cuda graph failed: {msg}\n{GRAPH_CAPTURE_FAILED_MSG[self.version]}"
            self.truth["error"] = {"type": "Exception", "message": wrapped, "allocation": alloc.name, "bytes": alloc.nbytes}
            tb = render_traceback(graph_capture_frames(self.version), f"Exception: {wrapped}", self.site)
            return self._scheduler_crash(tb, "oom")
        self.truth["error"] = {"type": "torch.OutOfMemoryError", "message": msg, "allocation": alloc.name, "bytes": alloc.nbytes}
        tb = render_traceback(oom_frames(self.version, alloc.name), f"torch.OutOfMemoryError: {msg}", self.site)
        return self._scheduler_crash(tb, "oom")

    def _scheduler_crash(self, traceback_text: str, outcome: str) -> int:
        """Scheduler logs the exception and SIGQUITs the launcher, which kills the tree and itself."""
        self.log.log(f"Scheduler hit an exception: {traceback_text}")
        self.log.log("Received sigquit from a child process. It usually means the child failed.")
        if self.version != "0.5.11":
            self.log.log(f"kill_process_tree called: parent_pid={self.pid}, include_parent=True, pid={self.pid}")
        self.used_bytes = 0
        self.publish_gpu(gone=True)
        self.finish(outcome, 137)
        sys.stdout.flush()
        sys.stderr.flush()
        os.kill(self.pid, signal.SIGKILL)
        return 137  # not reached

    # ---------------------------------------------------------------- serving
    def _serve(self) -> int:
        r = self.resolved
        host, port = _bind_host(r["host"]), int(r["port"])
        from mambaconsole.sim.http import serve_in_thread

        try:
            httpd = serve_in_thread(self, host, port)
        except OSError as exc:
            sys.stderr.write(f"ERROR:    [Errno {exc.errno}] error while attempting to bind on address ({host!r}, {port}): {exc.strerror}\n")
            self.used_bytes = 0
            self.publish_gpu(gone=True)
            return self.finish("bind_error", 1)
        self.log.raw(f"INFO:     Started server process [{self.pid}]")
        self.log.raw("INFO:     Waiting for application startup.")
        self.log.raw("INFO:     Application startup complete.")
        self.log.raw(f"INFO:     Uvicorn running on http://{host}:{port} (Press CTRL+C to quit)")
        self.sleep(PHASES["warmup"])
        self._prefill(1, 6, 0, warmup=True)
        self.ready = True
        self.startup["ready"] = time.time()
        self.log.log("The server is fired up and ready to roll!")
        self.truth["outcome"] = "ready"
        self.write_truth()
        try:
            self._workload()
        finally:
            httpd.shutdown()
        return 0

    def _prefill(self, new_seq: int, new_token: int, cached: int, warmup: bool = False) -> None:
        plan = self.plan
        s = self.stats
        self.log.log(
            prefill_line(
                self.version,
                new_seq=new_seq,
                new_token=new_token,
                cached_token=cached,
                full_usage=s["full_tokens"] / max(plan.kv_tokens, 1),
                mamba_usage=s["mamba_num"] / max(plan.max_mamba_cache_size, 1),
                running=s["running"],
                queue=s["queue"],
                pending_token=0,
                input_throughput=0.0 if warmup else new_token / (DECODE_INTERVAL / 2),
            )
        )

    def _workload(self) -> None:
        """Seeded requests; one decode line per 40 forward steps (``DECODE_INTERVAL`` s)."""
        rng = random.Random(self.seed)
        plan, r = self.plan, self.resolved
        draft = plan.draft_tokens
        mean = 1 + (draft - 1) * 0.6 if draft else None
        acc = mean
        slots_per_req = 1 + plan.ping_pong
        running: list[list[int]] = []  # [held tokens, tokens left]
        queue: list[list[int]] = []
        cap = max(plan.max_running_requests, 1)
        tick = 0  # decode intervals so far: a request's wait in the queue is counted in them
        while True:
            arrivals = rng.choice((0, 0, 1, 1, 2, 3))
            for _ in range(arrivals):
                queue.append([rng.randint(400, 4000), rng.randint(200, 1500), tick])
            admitted = []
            while queue and len(running) < cap:
                admitted.append(queue.pop(0))
                running.append(admitted[-1])
            s = self.stats
            s["running"], s["queue"] = len(running), len(queue)
            s["queue_tokens"] = sum(q[0] for q in queue)
            s["full_tokens"] = sum(q[0] for q in running)
            s["mamba_num"] = min(len(running) * slots_per_req, plan.max_mamba_cache_size)
            if admitted:
                new_tokens = sum(q[0] for q in admitted)
                cached = rng.choice((0, 0, 512, 1024)) if not r["disable_radix_cache"] else 0
                s["prompt_tokens"] += new_tokens
                s["requests"] += len(admitted)
                s["cache_hit_rate"] = cached / (new_tokens + cached)
                s["prefill_uncached_tokens"] += new_tokens
                s["prefill_busy_us"] += int(new_tokens / PREFILL_TOKENS_PER_S * 1e6)
                self._prefill(len(admitted), new_tokens, cached)
                for q in admitted:  # first token: the wait in the queue, then this prefill
                    self._observe("ttft", (tick - q[2]) * DECODE_INTERVAL + new_tokens / PREFILL_TOKENS_PER_S)
            self.sleep(DECODE_INTERVAL)
            if self.rendezvous is not None and self.rendezvous.peer_gone.is_set():
                # a peer rank died: with NCCL (GPUs) rank 0 hangs in its next collective until the
                # watchdog's timeout (sgl-project/sglang#3099, #12450): no more batches, /health 503
                self.hung = True
                continue
            tick += 1
            if not running:
                self.utilization = 0
                self.publish_gpu()
                continue
            steps = 40
            if draft:
                acc = mean + 0.8 * (acc - mean) + rng.gauss(0, 0.15)
                acc = min(max(acc, 1.0), float(draft))
                per_step = acc
            else:
                per_step = 1.0
            generated = 0
            for q in running:
                n = min(q[1], int(round(steps * per_step)))
                q[0] += n
                q[1] -= n
                generated += n
            s["generation_tokens"] += generated
            b, step_us = float(len(running)), DECODE_INTERVAL / steps * 1e6
            with self._lock:
                for i, add in enumerate((steps, b * steps, step_us * steps, b * b * steps, b * step_us * steps,
                                         generated)):
                    self.decode_moments[i] += add
            s["gen_throughput"] = generated / DECODE_INTERVAL
            for _ in running:  # one forward step (DECODE_INTERVAL / steps) yields per_step tokens
                self._observe("itl", DECODE_INTERVAL / steps / per_step)
            accept_len = accept_rate = None
            if draft:
                accept_len = round(acc, 2)
                accept_rate = (acc - 1) / (draft - 1) if draft > 1 else 0.0
                s["accept_len"], s["accept_rate"] = acc, accept_rate
                s["accept_tokens"] += acc * steps * len(running)
                s["forward_ct"] += steps * len(running)
            s["full_tokens"] = sum(q[0] for q in running)
            self.log.log(
                decode_line(
                    self.version,
                    running=len(running),
                    full_tokens=s["full_tokens"],
                    full_usage=s["full_tokens"] / max(plan.kv_tokens, 1),
                    mamba_num=s["mamba_num"],
                    mamba_usage=s["mamba_num"] / max(plan.max_mamba_cache_size, 1),
                    accept_len=accept_len,
                    accept_rate=accept_rate,
                    cuda_graph=len(running) <= r["cuda_graph_max_bs"],
                    gen_throughput=s["gen_throughput"],
                    queue=len(queue),
                )
            )
            with self._lock:
                self.truth["decode_lines"] += 1
                if accept_len is not None:
                    self.truth["accept_lens"].append(accept_len)
            self.utilization = min(99, 55 + 5 * len(running) + rng.randint(0, 8))
            self.publish_gpu()
            self.write_truth()
            running = [q for q in running if q[1] > 0]

    def _observe(self, which: str, seconds: float) -> None:
        """One TTFT or inter-token latency observation (nominal seconds: at --sim-speed 1)."""
        from prometheus_client import CollectorRegistry, Histogram

        with self._lock:
            if self._latency_reg is None:
                reg = CollectorRegistry()
                name = self.resolved["served_model_name"]
                # SGLang 0.5.23 observability/metrics_collector.py TokenizerMetricsCollector: names,
                # labels and default buckets
                labels = {"model_name": name} if self.version == "0.5.11" else {"model_name": name, "engine_type": "unified"}
                ttft = Histogram("sglang:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
                                 [*labels, "is_streaming"], registry=reg, buckets=TTFT_BUCKETS)
                itl = Histogram("sglang:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.",
                                list(labels), registry=reg, buckets=ITL_BUCKETS)
                self._latency_reg = (reg, ttft.labels(**labels, is_streaming="false"), itl.labels(**labels))
            _, ttft_child, itl_child = self._latency_reg
            (ttft_child if which == "ttft" else itl_child).observe(seconds)

    # ---------------------------------------------------------------- HTTP data
    def healthy(self) -> bool:
        return self.ready and not self.hung

    def models_list(self) -> dict:
        """``/v1/models`` (OpenAI's model list): one ModelCard (srt/entrypoints/openai/protocol.py:87,
        0.5.23) for the served model name, with the context length."""
        f = self.resolved.fields
        name = f.get("served_model_name") or f["model_path"]
        return {"object": "list", "data": [{"id": name, "object": "model", "created": int(self.startup["start"]),
                                            "owned_by": "sglang", "root": name, "parent": None,
                                            "max_model_len": f.get("context_length") or self.model.context_len}]}

    def load_snapshots(self) -> list[dict]:
        """This server's ``LoadSnapshot`` per DP rank, as SGLang 0.5.23's scheduler fills it
        (srt/managers/scheduler_components/load_inquirer.py:109 ``get_loads``; fields in
        srt/managers/load_snapshot.py:196): one rank, the sim runs one scheduler. Every value
        is the sim's own state: requests running and queued, KV tokens held (``token_usage``
        is the full-attention pool's, Mamba slots are not in SGLang's either), the memory
        plan (GiB, SGLang's "GB"), acceptance once a step was verified, the disaggregation
        mode; no ``lora`` section (the sim serves no adapters)."""
        plan, s, r = self.plan, self.stats, self.resolved
        queued = s["queue_tokens"]
        with self._lock:
            moments = list(self.decode_moments)
        snap: dict[str, Any] = {
            "timestamp": time.time(), "dp_rank": 0,
            "num_running_reqs": s["running"], "num_waiting_reqs": s["queue"],
            "num_waiting_uncached_tokens": queued, "num_used_tokens": s["full_tokens"],
            "num_total_tokens": s["full_tokens"] + queued, "num_active_tokens": s["full_tokens"] + queued,
            "num_prealloc_ready_tokens": 0, "max_total_num_tokens": plan.kv_tokens,
            "max_running_requests": plan.max_running_requests,
            "token_usage": round(s["full_tokens"] / max(plan.kv_tokens, 1), 4),
            "gen_throughput": round(s["gen_throughput"], 2), "cache_hit_rate": round(s["cache_hit_rate"], 4),
            "utilization": round(self.utilization / 100, 4),
            "total_prefill_uncached_tokens": s["prefill_uncached_tokens"],
            "total_prefill_busy_us": s["prefill_busy_us"],
            "decode_moments": moments if moments[0] > 0 else None,
            "memory": {"weight_gb": round(self.model.weight_bytes / GiB, 3),
                       "kv_cache_gb": round((plan.k_bytes + plan.v_bytes) / GiB, 3),
                       "graph_gb": round(plan.graph_bytes / GiB, 3), "token_capacity": plan.kv_tokens},
            "disaggregation": {"mode": r.fields.get("disaggregation_mode") or "null",
                               "prefill_bootstrap_queue_reqs": 0, "prefill_inflight_queue_reqs": 0,
                               "decode_prealloc_queue_reqs": 0, "decode_transfer_queue_reqs": 0,
                               "decode_retracted_queue_reqs": 0, "kv_transfer_speed_gb_s": 0.0,
                               "kv_transfer_latency_ms": 0.0},
            "queues": {"waiting": s["queue"], "grammar": 0, "paused": 0, "retracted": 0, "prealloc_ready": 0},
        }
        if plan.draft_tokens and s["forward_ct"]:
            snap["speculative"] = {"accept_length": s["accept_tokens"] / s["forward_ct"],
                                   "accept_rate": s["accept_rate"]}
        return [snap]

    def loads(self, query: str) -> tuple[int, bytes, str]:
        """``GET /v1/loads?QUERY`` (served for 0.5.23; 0.5.11 gets 404, its earlier shape is not simulated): status, body,
        content type (:func:`mambaconsole.sim.loads.loads_answer`)."""
        from mambaconsole.sim.loads import loads_answer

        f = self.resolved.fields
        start = time.perf_counter()
        answer = loads_answer(self.load_snapshots(), query, version=self.version, accelerator=f"NVIDIA {self.gpu.name}",
                              num_accelerators=int(f.get("tp_size") or 1) * int(f.get("pp_size") or 1), site=self.site)
        if answer[0] != 400:  # a query FastAPI refuses never reaches the handler's timer
            self._observe_loads(time.perf_counter() - start)
        return answer

    def _observe_loads(self, seconds: float) -> None:
        """``sglang:get_loads_duration_seconds`` as 0.5.23 observes it around each /v1/loads
        (srt/entrypoints/v1_loads.py ``get_loads``; the histogram, its labels and buckets:
        srt/observability/metrics_collector.py:1946); absent from /metrics until the first call."""
        from prometheus_client import CollectorRegistry, Histogram

        with self._lock:
            if self._loads_reg is None:
                reg = CollectorRegistry()
                labels = {"model_name": self.resolved["served_model_name"], "engine_type": "unified"}
                h = Histogram("sglang:get_loads_duration_seconds", "Time spent serving /v1/loads requests (seconds).",
                              list(labels), registry=reg,
                              buckets=(0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0))
                self._loads_reg = (reg, h.labels(**labels))
            self._loads_reg[1].observe(seconds)

    def model_info(self) -> dict:
        f = self.resolved.fields
        info = {
            "model_path": f["model_path"],
            "tokenizer_path": f["tokenizer_path"],
            "is_generation": True,
            "preferred_sampling_params": f.get("preferred_sampling_params"),
            "weight_version": f.get("weight_version", "default"),
            "has_image_understanding": True,
            "has_audio_understanding": False,
            "model_type": "qwen3_5",
            "architectures": [self.model.architecture],
        }
        if self.version != "0.5.11":
            info.update(served_model_name=f["served_model_name"], load_format=f.get("load_format"),
                        reasoning_parser=f.get("reasoning_parser"), tool_call_parser=f.get("tool_call_parser"),
                        disaggregation_mode=f.get("disaggregation_mode", "null"))
        return info

    def server_info(self) -> dict:
        """``/server_info`` as this version's server answers it: its ServerArgs fields (only those
        of the version's ServerArgs: the sim's own working values such as ``cuda_graph_max_bs``,
        no 0.5.23 field, stay out), ``internal_states[0]`` (the scheduler's copy plus its
        runtime keys) and the top-level keys of 0.5.23's ``get_server_info``
        (srt/entrypoints/http_server.py: build_server_info, startup_time, internal_states,
        version, frontend), checked against a real 0.5.23 server's answer
        (tests/test_sim_vs_real.py)."""
        plan, s = self.plan, self.stats
        names = {x["name"] for x in simflags.load_spec(self.version)["fields"]}
        f = {k: v for k, v in self.resolved.fields.items() if k in names}
        internal = dict(f)
        internal["max_mamba_cache_size"] = plan.max_mamba_cache_size
        internal["last_gen_throughput"] = s["gen_throughput"]
        weight = round(self.model.weight_bytes / GiB, 2 if self.version == "0.5.11" else 3)
        kv = round((plan.k_bytes + plan.v_bytes) / GiB, 2 if self.version == "0.5.11" else 3)
        if self.version == "0.5.11":
            internal["memory_usage"] = {"weight": weight, "kvcache": kv, "token_capacity": plan.kv_tokens,
                                        "graph": round(plan.graph_bytes / GiB, 2)}
        else:
            g = round(plan.graph_bytes / GiB, 3)
            internal["memory_usage"] = {
                "weight": weight, "kvcache": kv,
                "startup_available": round(self.startup.get("available_gpu_mem", 0) / GiB, 3),
                "token_capacity": plan.kv_tokens, "token_capacity_swa": 0,
                "graph": {"prefill": 0.0, "decode": 0.0 if plan.draft_tokens else g,
                          "target_verify": g if plan.draft_tokens else 0.0, "draft_prefill": 0.0,
                          "draft_decode": 0.0, "draft_extend": 0.0},
            }
            internal["startup_time"] = round(self.startup.get("ready", time.time()) - self.startup["start"], 3)
            internal["world_size"] = 1
            internal["disaggregation_mode"] = f.get("disaggregation_mode", "null")
            internal["decode_cuda_graph_bs"] = _graph_batch_sizes(
                min(self.resolved.fields["cuda_graph_max_bs"], max(plan.max_running_requests, 1)))
            internal["decode_cuda_graph_memory_gb"] = g
        internal["effective_max_running_requests_per_dp"] = plan.max_running_requests
        if plan.draft_tokens and s["forward_ct"]:
            internal["avg_spec_accept_length"] = s["accept_tokens"] / s["forward_ct"]
        info = dict(f)
        if self.version != "0.5.11":
            info["launch_command"] = "python -m sglang.launch_server " + " ".join(self.argv)
        info.update(status="ready" if self.ready else "starting", max_total_num_tokens=plan.kv_tokens,
                    max_req_input_len=self.model.context_len - 5, internal_states=[internal], version=self.version)
        if self.version != "0.5.11":
            info["startup_time"] = internal["startup_time"]
            info["kv_events"] = None
            info["frontend"] = "python"
            # 0.5.23 reports the hierarchical cache's layout (disabled unless --enable-hierarchical-cache)
            info["hicache_object_layout"] = {"enabled": False, "backend": None, "page_size": f.get("page_size", 1),
                                             "hicache_object_layout": {"pools": []},
                                             "reason": "Hierarchical cache is disabled"}
        return info

    def metrics_text(self) -> bytes:
        from prometheus_client import CollectorRegistry, Counter, Gauge, disable_created_metrics, generate_latest

        # a real 0.5.23 server's /metrics has no *_created samples (its counters and histograms
        # show none); this process serves nothing else
        disable_created_metrics()

        plan, s, v = self.plan, self.stats, self.version
        reg = CollectorRegistry()
        labels = {"model_name": self.resolved["served_model_name"], "engine_type": "unified", "tp_rank": "0", "pp_rank": "0", "moe_ep_rank": "0"}

        def gauge(name: str, doc: str, value: float, **extra: str) -> None:
            g = Gauge(f"sglang:{name}", doc, list(labels) + list(extra), registry=reg)
            g.labels(**labels, **extra).set(value)

        kv_used = s["full_tokens"]
        mamba_usage = s["mamba_num"] / max(plan.max_mamba_cache_size, 1)
        full_usage = kv_used / max(plan.kv_tokens, 1)
        gauge("num_running_reqs", "The number of running requests.", s["running"])
        gauge("num_queue_reqs", "The number of requests in the waiting queue.", s["queue"])
        gauge("num_used_tokens", "The number of used tokens.", kv_used)
        gauge("token_usage", "The token usage.", round(max(full_usage, mamba_usage), 2))
        gauge("full_token_usage", "The token usage for full attention layers.", full_usage)
        gauge("swa_token_usage", "The token usage for SWA layers.", 0)
        gauge("mamba_usage", "The token usage for Mamba layers.", mamba_usage)
        gauge("kv_used_tokens", "The number of used KV tokens.", kv_used)
        gauge("kv_available_tokens", "The number of available KV tokens.", plan.kv_tokens - kv_used)
        gauge("kv_evictable_tokens", "The number of evictable KV tokens.", 0)
        if v != "0.5.11":
            gauge("mamba_used_tokens", "The number of used mamba slots.", s["mamba_num"])
            gauge("mamba_available_tokens", "The number of available mamba slots.", plan.max_mamba_cache_size - s["mamba_num"])
            gauge("mamba_evictable_tokens", "The number of evictable mamba slots.", 0)
        gauge("max_total_num_tokens", "Maximum total number of tokens in the KV cache pool.", plan.kv_tokens)
        gauge("gen_throughput", "The generation throughput (token/s).", s["gen_throughput"])
        gauge("cache_hit_rate", "The prefix cache hit rate.", s["cache_hit_rate"])
        gauge("spec_accept_length", "The average acceptance length of speculative decoding.", s["accept_len"] if plan.draft_tokens else 0)
        gauge("spec_accept_rate", "The ratio of accepted drafts / proposed drafts.", s["accept_rate"] if plan.draft_tokens else 0)
        if v != "0.5.11":
            gauge("spec_num_steps", "The number of speculative decoding steps.", self.resolved["speculative_num_steps"] or 0)
            gauge("spec_num_draft_tokens", "The number of speculative draft tokens.", plan.draft_tokens or 0)
        gauge("num_retracted_reqs", "The number of retracted requests.", 0)
        gauge("num_paused_reqs", "The number of paused requests.", 0)
        gauge("is_cuda_graph", "Whether the batch is using CUDA graph.", 1)
        gauge("utilization", "Scheduler utilization.", self.utilization / 100)
        gauge("startup_available_gpu_memory_gb", "Available GPU memory after startup (GB).", self.startup.get("available_gpu_mem", 0) / GiB)
        if v == "0.5.11":
            gauge("engine_startup_time", "The time taken for the engine to start up.", self.startup.get("ready", time.time()) - self.startup["start"])
            gauge("engine_load_weights_time", "The time taken for the engine to load weights.", PHASES["weights"] / self.speed)
        else:
            gauge("weight_memory_usage_gb", "Weight memory usage (GB).", self.model.weight_bytes / GiB)
            gauge("kv_cache_memory_usage_gb", "KV cache memory usage (GB).", (plan.k_bytes + plan.v_bytes) / GiB)
        tok_labels = {"model_name": labels["model_name"]}
        for name, doc, value in (
            ("prompt_tokens", "Number of prefill tokens processed.", s["prompt_tokens"]),
            ("generation_tokens", "Number of generation tokens processed.", s["generation_tokens"]),
            ("num_requests", "Number of requests processed.", s["requests"]),
        ):
            c = Counter(f"sglang:{name}", doc, list(tok_labels), registry=reg)
            c.labels(**tok_labels).inc(value)
        with self._lock:
            latency = generate_latest(self._latency_reg[0]) if self._latency_reg else b""
            latency += generate_latest(self._loads_reg[0]) if self._loads_reg else b""
        return generate_latest(reg) + latency

    # ---------------------------------------------------------------- signals
    def _install_signals(self) -> dict:
        """SIGTERM and SIGINT stop the server: their handler only notes the signal and writes a
        byte to a pipe, and a thread reading that pipe sets :attr:`_stop`. Python runs a handler
        in the main thread between two bytecodes, possibly while that thread holds the lock of
        ``_stop`` inside ``Event.wait`` (:meth:`sleep`); ``Event.set`` in the handler would then
        wait on that lock for good: the server ignored the SIGINT, and a console's stop ended
        at SIGKILL. Returns the handlers replaced, for :meth:`_restore_signals`."""
        r, w = os.pipe()
        self._signal_pipe = w

        def relay() -> None:
            with os.fdopen(r, "rb", buffering=0) as f:
                if f.read(1):
                    self._stop.set()

        threading.Thread(target=relay, name="sim-signals", daemon=True).start()

        def handler(signum, frame):
            self._signal = signum
            os.write(w, b"s")

        old = {}
        for sig in (signal.SIGTERM, signal.SIGINT):
            old[sig] = signal.signal(sig, handler)
        return old

    def _restore_signals(self, old: dict) -> None:
        """Put back the handlers :meth:`_install_signals` replaced and end its relay thread."""
        for sig, h in old.items():
            signal.signal(sig, h)
        w, self._signal_pipe = self._signal_pipe, None
        if w is not None:
            os.close(w)

    def _stopped(self) -> int:
        sig = getattr(self, "_signal", signal.SIGTERM)
        if self.ready and self.truth.get("outcome") != "follower":
            self.log.raw("INFO:     Shutting down")
            self.log.raw("INFO:     Finished server process [%d]" % self.pid)
        self.used_bytes = 0
        self.publish_gpu(gone=True)
        self.finish(self.truth.get("outcome") or "stopped", 128 + sig)
        sys.stdout.flush()
        sys.stderr.flush()
        signal.signal(sig, signal.SIG_DFL)
        os.kill(self.pid, sig)
        return 128 + sig


#: the address this simulated node's HTTP servers bind instead of ``--host``: two simulated
#: nodes on one machine each get their own loopback address, as two machines have their own
#: (the same argv, ``--port`` included, runs on every node of a multi-node run)
ENV_BIND_HOST = "MAMBACONSOLE_SIM_BIND_HOST"


def _bind_host(host: str) -> str:
    return os.environ.get(ENV_BIND_HOST) or host


class _Stopped(Exception):
    pass


def _graph_batch_sizes(max_bs: int) -> list[int]:
    """SGLang's default capture list up to ``max_bs``: 1, 2, 4, 8, 12, then steps of 8 (≤0.5.11 rule)."""
    sizes = [1, 2, 4, 8, 12] + list(range(16, 257, 8)) + list(range(272, 513, 16))
    out = [b for b in sizes if b <= max_bs]
    return out or [1]


def sim_node_facts(model: HybridModel, gpu: SimGPU) -> dict:
    """What ``mambaconsole.agent.node_facts`` reads on a node, for the simulated one: the model's
    config.json, its weights' bytes, the idle GPU (free = total; SGLang's CUDA context comes
    out of it at launch)."""
    return {"model_path": model.name, "config_path": None, "config": model.config_json(),
            "weights_bytes": model.weight_bytes, "weights_source": "safetensors", "weights_files": 0,
            "gpus": [{"index": 0, "name": gpu.name, "total_bytes": gpu.total_bytes, "free_bytes": gpu.total_bytes}],
            "gpu_source": "simulated", "errors": [], "simulated": True}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    sim, rest = sim_arg_parser().parse_known_args(argv)
    if sim.sim_facts:
        try:
            gpu = SimGPU.parse(sim.sim_gpu)
        except ValueError as exc:
            print(f"python -m mambaconsole.sim: error: {exc}", file=sys.stderr)
            return 2
        sys.stdout.write(json.dumps(sim_node_facts(QWEN36_27B, gpu)) + "\n")
        return 0
    if sim.sim_resolve or sim.sim_params:
        from mambaconsole.sim import preflight

        try:
            gpu = SimGPU.parse(sim.sim_gpu)
        except ValueError as exc:
            print(f"python -m mambaconsole.sim: error: {exc}", file=sys.stderr)
            return 2
        out = preflight.params(sim.sim_version) if sim.sim_params else preflight.resolve_report(sim.sim_version, rest, gpu)
        sys.stdout.write(json.dumps(out) + "\n")
        return 0
    try:
        server = SimServer(sim, rest)
    except ValueError as exc:
        print(f"python -m mambaconsole.sim: error: {exc}", file=sys.stderr)
        return 2
    return server.run()


