"""The console's first look at a node in one exchange: the run store's listing and, in the same
process, the current run's log followed by the node agent.

Stdlib only (Python >= 3.8). Opening the console needs the runs (which run is current) and
then that run's log; as two remote commands in a row it pays the node's command start-up twice
before the first paint (over SSH each command starts the login shell, whose rc files may take
100-200 ms: ``pyenv init``, ``conda activate``). This program does both in one command.

The console sends this file on stdin, after two lines it puts first: ``RUNS_AGENT = '...'`` and
``NODE_AGENT = '...'``, the sources of ``runs_agent.py`` and ``node_agent.py`` (Python string
literals)::

    python3 -u - LIST_REQUEST_JSON [node agent options ...]

Output, one JSON object per line: first ``{"type": "runs", "ok": true, "result": {...}}``
(``runs_agent.py``'s answer to ``list`` with ``LIST_REQUEST_JSON``, which asks for
``current``; or ``"ok": false`` and ``"error"``), then, when the listing names a current run,
the node agent's records for ``--run CURRENT`` and the options given (``hello`` first; the
shapes are in ``node_agent.py``), until the console closes the stream. Without a current run
the program ends after the first line.
"""

import json
import sys
import types


def _module(name, source):
    """``source`` as the module ``name`` (its ``__main__`` block does not run)."""
    mod = types.ModuleType(name)
    mod.__file__ = name + ".py"
    sys.modules[name] = mod
    exec(compile(source, name + ".py", "exec"), mod.__dict__)
    return mod


def main():
    req = json.loads(sys.argv[1])
    runs = _module("runs_agent", RUNS_AGENT)  # noqa: F821 - put first by the console
    answer = runs.answer("list", dict(req, current=True))
    rec = dict(answer, type="runs")
    sys.stdout.write(json.dumps(rec, separators=(",", ":")) + "\n")
    sys.stdout.flush()
    result = answer.get("result") if answer.get("ok") else None
    current = result.get("current") if isinstance(result, dict) else None
    if not current:
        return 0
    agent = _module("node_agent", NODE_AGENT)  # noqa: F821 - put first by the console
    return agent.main(sys.argv[2:] + ["--run", current])


if __name__ == "__main__":
    sys.exit(main())
