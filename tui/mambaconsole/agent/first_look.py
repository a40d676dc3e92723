"""The console's first look at a node in one exchange: the run store's listing and, in the same
process, the current run's log followed by the node agent.

Stdlib only (Python >= 3.8). Opening the console needs the runs (which run is current) and
then that run's log; as two remote commands in a row it pays the node's command start-up twice
before the first paint (over SSH each command starts the login shell, whose rc files may take
100-200 ms: ``pyenv init``, ``conda activate``). This program does both in one command.

The first view also shows the node's GPUs: this program takes the first GPU sample too, by
running the node agent ``--once`` with the GPU reader's python as its child from its start on,
beside the listing and the log (a second remote command would pay the node's command start-up
again, at the same moment).

The console sends this file on stdin, after two lines it puts first: ``RUNS_AGENT = '...'`` and
``NODE_AGENT = '...'``, the sources of ``runs_agent.py`` and ``node_agent.py`` (Python string
literals)::

    python3 -u - LIST_REQUEST_JSON GPU_SAMPLE_JSON [node agent options ...]

``GPU_SAMPLE_JSON``: ``null`` (no GPU sample), or ``{"python": PYTHON, "gpu": "auto" | "pynvml" |
"nvidia-smi" | "sim", "sim_file": PATH or null}``: the GPU reader's python (found on this
process's ``PATH``, as the login shell would) and the node agent's ``--gpu`` and ``--sim-file``.

Output, one JSON object per line: first ``{"type": "runs", "ok": true, "result": {...}}``
(``runs_agent.py``'s answer to ``list`` with ``LIST_REQUEST_JSON``, which asks for
``current``; or ``"ok": false`` and ``"error"``), then, when the listing names a current run,
the node agent's records for ``--run CURRENT`` and the options given (``hello`` first; the
shapes are in ``node_agent.py``), until the console closes the stream. Without a current run
the program ends after the first line. With a GPU sample asked for and a current run, one
``{"type": "gpu_sample", "record": REC}`` comes somewhere among the agent's records (before its
``hello`` too), as soon as the sample is taken: ``REC`` is the node agent's ``gpu``, ``no_gpu``
or ``error`` record (its sample failed) of ``--once``, or ``null`` when that agent did not
answer (its python is missing, it failed, or it took more than GPU_SAMPLE_S seconds).
"""

import json
import subprocess
import sys
import threading
import types

#: seconds the GPU sample may take at most (an ``nvidia-smi`` that hangs on a broken GPU)
GPU_SAMPLE_S = 30


def _module(name, source):
    """``source`` as the module ``name`` (its ``__main__`` block does not run)."""
    mod = types.ModuleType(name)
    mod.__file__ = name + ".py"
    sys.modules[name] = mod
    exec(compile(source, name + ".py", "exec"), mod.__dict__)
    return mod


class GpuSample(threading.Thread):
    """One GPU sample, taken from the program's start on: the node agent ``--once`` run by
    ``ask["python"]`` (``--gpu ask["gpu"]``, ``--sim-file ask["sim_file"]``), its second record.
    A child process, not this one: the GPU library's import (pynvml: tens of ms) takes another
    core, not the listing's or the log's. Emitted as a ``gpu_sample`` record once
    :meth:`hand_over` gave the node agent (whose ``emit`` keeps each record on its line)."""

    def __init__(self, ask):
        threading.Thread.__init__(self, daemon=True)
        self.argv = [ask["python"], "-u", "-", "--once", "--gpu", ask.get("gpu") or "auto"]
        if ask.get("sim_file"):
            self.argv += ["--sim-file", ask["sim_file"]]
        self.proc = None
        self.agent = None
        self.ready = threading.Event()

    def run(self):
        rec = None
        try:
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.DEVNULL)
            try:
                out = self.proc.communicate(NODE_AGENT.encode("utf-8"), timeout=GPU_SAMPLE_S)[0]  # noqa: F821
            except subprocess.TimeoutExpired:
                self.proc.kill()
                out = b""
            recs = [json.loads(line) for line in out.splitlines() if line.strip()]
            if len(recs) >= 2 and recs[0].get("type") == "hello" and isinstance(recs[1], dict):
                rec = recs[1]
        except (OSError, ValueError, subprocess.SubprocessError):
            rec = None
        self.ready.wait()
        self.agent.emit({"type": "gpu_sample", "record": rec})

    def hand_over(self, agent):
        self.agent = agent
        self.ready.set()

    def drop(self):
        """No sample wanted after all (no current run): end the child."""
        proc = self.proc
        if proc is not None and proc.poll() is None:
            proc.kill()


def main():
    req = json.loads(sys.argv[1])
    gpu_ask = json.loads(sys.argv[2])
    sample = GpuSample(gpu_ask) if gpu_ask else None
    if sample is not None:
        sample.start()
    runs = _module("runs_agent", RUNS_AGENT)  # noqa: F821 - put first by the console
    answer = runs.answer("list", dict(req, current=True))
    rec = dict(answer, type="runs")
    sys.stdout.write(json.dumps(rec, separators=(",", ":")) + "\n")
    sys.stdout.flush()
    result = answer.get("result") if answer.get("ok") else None
    current = result.get("current") if isinstance(result, dict) else None
    if not current:
        if sample is not None:
            sample.drop()
        return 0
    agent = _module("node_agent", NODE_AGENT)  # noqa: F821 - put first by the console
    if sample is not None:
        sample.hand_over(agent)
    return agent.main(sys.argv[3:] + ["--run", current])


if __name__ == "__main__":
    sys.exit(main())
