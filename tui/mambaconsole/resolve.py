"""Resolved SGLang ServerArgs with provenance, computed on the node by SGLang itself.

The work happens in :mod:`mambaconsole.agent.resolver` (stdlib-only, sent on stdin to the node's
python, which must be the SGLang server's python). This module sends it through a
:class:`~mambaconsole.node.base.Node` and checks what comes back.

API (all ``async``; no Textual)::

    result = await resolve(node, argv, python=PY, env=None)    # one fresh process (4-8 s)
    meta   = await params(node, python=PY)                      # the parser's options (edit form)

    async with WarmResolver(node, python=PY) as warm:           # one warm process per node
        result = await warm.resolve(argv)                       # first: ~6 s, then ~0.1-0.3 s
        meta   = await warm.params()

``result`` is a dict with exactly these keys (SGLang 0.5.9-0.5.23; ``file`` paths are relative
to the node's site-packages; values JSON cannot hold are their Python ``repr`` strings)::

    {"sglang_version": str, "python": str, "ok": bool, "elapsed_s": float (seconds of parse +
                                                                  resolution, without the import),
     "usage_error": None | {"message": str, "unknown_flags": [str], "suggestions": {flag: str}},
     "error": None | {"type", "message", "file", "line", "function", "sglang_file", "sglang_line",
                      "step"},
     "fields": {FIELD: {"value", "default", "given", "option", "source", "writes": [
                 {"old", "new", "function", "file", "line", "declared_as"}]}},
     "messages": [{"level", "logger", "message", "file", "line"}]}

``source`` is ``default`` | ``cli`` | ``config`` (``--config`` YAML) | ``env`` (SGLang derived it
from an environment variable that was set) | ``derived`` (SGLang changed a value nobody gave; an
explicit ``auto`` counts as not given) | ``overridden`` (SGLang replaced a concrete value the
user gave). With a ``usage_error`` ``fields`` is empty; with an ``error`` it holds the fields as
resolved up to the failure. Config quirks (``--config=x.yaml`` ignored, underscore YAML keys) are
``messages`` from logger ``mambaconsole.resolver``.

Errors: :class:`ResolveError` (a :class:`~mambaconsole.errors.ConsoleError`, one line) when the
resolver cannot run or answers something that is not this shape (no sglang in that python, a
crash, a timeout). SGLang rejecting the argv is NOT an exception: it is ``ok: False``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from mambaconsole.errors import ConsoleError
from mambaconsole.node.base import CommandTimeout, Node, NodeError, in_folder
from mambaconsole.node.runs import agent_script
from mambaconsole.sglang.flags import explain_unknown_flags

__all__ = ["ResolveError", "resolve", "planned_device", "params", "WarmResolver", "check_result", "SOURCES", "CHANGED_SOURCES"]

SOURCES = ("default", "cli", "config", "env", "derived", "overridden")
#: sources that mean SGLang's own resolution code changed the value
CHANGED_SOURCES = ("env", "derived", "overridden")
RESULT_KEYS = {"sglang_version", "python", "ok", "elapsed_s", "usage_error", "error", "fields", "messages"}
FIELD_KEYS = {"value", "default", "given", "option", "source", "writes"}
WRITE_KEYS = {"old", "new", "function", "file", "line", "declared_as"}
ERROR_KEYS = {"type", "message", "file", "line", "function", "sglang_file", "sglang_line", "step"}
USAGE_KEYS = {"message", "unknown_flags", "suggestions"}
MESSAGE_KEYS = {"level", "logger", "message", "file", "line"}

#: seconds a fresh resolver may take (import of sglang ~4-5 s, first resolution 1-2 s, on 2 CPUs)
DEFAULT_TIMEOUT = 180.0


class ResolveError(ConsoleError):
    """The resolver could not run on the node, or answered something unusable."""


def _script() -> bytes:
    return agent_script("resolver.py")


def check_result(result: Any) -> dict:
    """``result`` if it has exactly the documented shape; else :class:`ResolveError`."""
    def bad(what: str):
        raise ResolveError(f"resolver answered an unexpected shape ({what})")

    if not isinstance(result, dict):
        bad("not an object")
    if "fatal" in result:
        raise ResolveError(str(result["fatal"]))
    if set(result) != RESULT_KEYS:
        bad(f"keys {sorted(set(result) ^ RESULT_KEYS)}")
    if result["usage_error"] is not None and set(result["usage_error"]) != USAGE_KEYS:
        bad("usage_error")
    if result["error"] is not None and set(result["error"]) != ERROR_KEYS:
        bad("error")
    for name, f in result["fields"].items():
        if set(f) != FIELD_KEYS or f["source"] not in SOURCES:
            bad(f"field {name}")
        for w in f["writes"]:
            if set(w) != WRITE_KEYS:
                bad(f"write of {name}")
    for m in result["messages"]:
        if set(m) != MESSAGE_KEYS:
            bad("message")
    return result


def _answer(result: Any) -> dict:
    """A resolver's answer, checked (:func:`check_result`), with each unknown flag's suggestion
    from what SGLang's releases renamed or removed where the flag table knows it
    (:func:`mambaconsole.sglang.flags.explain_unknown_flags`; the node's resolver only knows
    its own parser)."""
    result = check_result(result)
    if result["usage_error"] is not None:
        result["usage_error"] = explain_unknown_flags(result["usage_error"], result["sglang_version"])
    return result


def _parse_answer(node: Node, python: str, exit_status: int | None, stdout: bytes, stderr: bytes) -> dict:
    lines = [ln for ln in stdout.decode("utf-8", "replace").splitlines() if ln.strip()]
    if not lines:
        tail = [ln for ln in stderr.decode("utf-8", "replace").splitlines() if ln.strip()]
        why = tail[-1].strip() if tail else "no output"
        raise ResolveError(f"resolver on {node.name} ({python}) failed (exit status {exit_status}): {why}")
    try:
        return json.loads(lines[-1])
    except json.JSONDecodeError:
        raise ResolveError(f"resolver on {node.name} ({python}) answered something that is not JSON: "
                           f"{lines[-1][:120]!r}") from None


async def _run_script(node: Node, python: str, args: Sequence[str], env: Mapping[str, str] | None,
                      timeout: float, cwd: str | None = None) -> dict:
    try:
        res = await node.run(in_folder([python, "-u", "-", *args], cwd), input=_script(), env=env, timeout=timeout)
    except NodeError as exc:
        raise ResolveError(f"resolver on {node.name}: {exc}") from None
    return _parse_answer(node, python, res.exit_status, res.stdout, res.stderr)


def _device_args(planned_device: Mapping[str, Any] | None) -> list[str]:
    return ["--planned-device", json.dumps(dict(planned_device))] if planned_device else []


async def resolve(node: Node, argv: Sequence[str], *, python: str = "python3",
                  env: Mapping[str, str] | None = None, cwd: str | None = None,
                  timeout: float = DEFAULT_TIMEOUT, planned_device: Mapping[str, Any] | None = None) -> dict:
    """Resolve the SGLang launch ``argv`` (server flags only, e.g. ``["--model-path", P, ...]``)
    in a fresh ``python`` process on ``node``; ``env`` is added to its environment (like a launch
    command's ``VAR=value`` prefix), ``cwd`` is its working folder (a server's relative
    ``--model-path`` resolves there). ``planned_device`` (:func:`planned_device`): SGLang resolves
    as on that GPU instead of the node's (the answer's first message says so). Returns the
    result dict (module docstring)."""
    return _answer(await _run_script(node, python, [*_device_args(planned_device), "--", *argv], env, timeout, cwd))


def planned_device(name: str, total_bytes: int, capability: tuple[int, int], *, count: int = 1,
                   cuda_version: str = "12.8") -> dict:
    """The device the resolver presents to SGLang in place of the node's
    (:func:`mambaconsole.agent.resolver.install_planned_device`): ``{"name", "total_bytes",
    "capability": [major, minor], "count", "cuda_version"}``."""
    if total_bytes <= 0 or count <= 0:
        raise ValueError("a planned device needs memory and at least one GPU")
    return {"name": str(name), "total_bytes": int(total_bytes), "capability": [int(capability[0]), int(capability[1])],
            "count": int(count), "cuda_version": str(cuda_version)}


async def params(node: Node, *, python: str = "python3", env: Mapping[str, str] | None = None,
                 timeout: float = DEFAULT_TIMEOUT, cwd: str | None = None) -> dict:
    """The node's SGLang parser options: ``{"sglang_version", "python", "params": [{
    "option_strings", "dest", "field", "default", "choices", "type", "nargs", "const",
    "required", "help", "hidden", "action", "deprecated", "metavar"}]}`` (help=SUPPRESS options
    have ``hidden: true``; set choices are sorted)."""
    answer = await _run_script(node, python, ["--params"], env, timeout, cwd)
    if "fatal" in answer:
        raise ResolveError(str(answer["fatal"]))
    if not isinstance(answer, dict) or not isinstance(answer.get("params"), list):
        raise ResolveError("resolver answered an unexpected shape (params)")
    return answer


class WarmResolver:
    """One warm resolver process on ``node``, answering each argv in a fresh fork of itself.

    The parent imports sglang once and runs one warm-up resolution (of the first argv asked, or
    ``warm_argv``), then restores ``os.environ`` and clears SGLang's ``lru_cache``\\ s (model
    config, hardware probes), so each child starts from the state a fresh process has, minus the
    imports. Each child clears them again, resolves, answers and exits: nothing leaks between
    resolutions (same answers as :func:`resolve`, checked by the tests).

    GPU nodes: the parent refuses to initialise CUDA during its warm-up (torch's lazy CUDA init
    raises there; children do the device queries), so forked children can still use CUDA and
    the parent holds no memory on the server's GPU. If CUDA is initialised anyway, the parent
    says so and this class falls back to a fresh process per resolve. UNVERIFIED on a real GPU.

    Transport: the parent (``python -u - --serve``, kept open with ``Node.stream_lines``) listens
    on a unix socket in a private 0700 temp dir on the node; each request is one exchange on
    that socket through :meth:`Node.exchange_unix` (over SSH a channel of the open connection,
    no process started), or, where the node refuses such channels, one short ``python -I -S -c
    CLIENT SOCKET`` command through :meth:`Node.run`. The parent exits when
    its output channel closes (heartbeat every 5 s) or after ``idle_timeout`` seconds unused.

    ``env`` is fixed for the process (e.g. ``PYTHONPATH``); ``resolve(argv, env=...)`` adds
    per-request variables inside the child (read by SGLang at resolution time, not at import).
    ``cwd``: the process's working folder (a run's own, so relative paths resolve as for it).
    """

    def __init__(self, node: Node, python: str = "python3", *, env: Mapping[str, str] | None = None,
                 cwd: str | None = None,
                 warm_argv: Sequence[str] | None = None, idle_timeout: float = 1800.0,
                 start_timeout: float = DEFAULT_TIMEOUT, request_timeout: float = 120.0,
                 planned_device: Mapping[str, Any] | None = None) -> None:
        self.node = node
        self.planned_device = dict(planned_device) if planned_device else None
        self.python = python
        self.env = dict(env) if env else None
        self.cwd = cwd or None
        self.warm_argv = list(warm_argv) if warm_argv is not None else None
        self.idle_timeout = idle_timeout
        self.start_timeout = start_timeout
        self.request_timeout = request_timeout
        #: the parent's ``ready`` line (socket, pid, sglang_version, warmup_s, warmup, ...)
        self.info: dict | None = None
        #: "warm" (fork per resolve) or "cold" (fallback: a fresh process per resolve)
        self.mode = "warm"
        self._lines = None
        self._drain: asyncio.Task | None = None
        self._lock = asyncio.Lock()
        #: requests go over a UNIX-socket channel until the node refuses one (then a command each)
        self._unix_channel = True

    async def __aenter__(self) -> "WarmResolver":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    @property
    def alive(self) -> bool:
        return self.info is not None and self._drain is not None and not self._drain.done()

    async def start(self, warm_argv: Sequence[str] | None = None) -> dict:
        """Start the warm parent (imports sglang and warms up; several seconds). Returns its
        ``ready`` line. Idempotent while it is alive."""
        if self.alive:
            return self.info  # type: ignore[return-value]
        await self._stop()
        argv = self.warm_argv if self.warm_argv is not None else (list(warm_argv) if warm_argv else [])
        cmd = [self.python, "-u", "-", *_device_args(self.planned_device), "--serve", "--idle-timeout",
               str(self.idle_timeout)]
        if argv:
            cmd += ["--warm-argv", json.dumps(argv)]
        self._lines = self.node.stream_lines(in_folder(cmd, self.cwd), input=_script(), env=self.env)
        try:
            first = await asyncio.wait_for(self._next_event(), self.start_timeout)
        except asyncio.TimeoutError:
            await self._stop()
            raise ResolveError(f"warm resolver on {self.node.name} did not start within {self.start_timeout:g} s") from None
        if first is None:
            await self._stop()
            raise ResolveError(f"warm resolver on {self.node.name} ({self.python}) exited before it was ready")
        if "fatal" in first:
            await self._stop()
            raise ResolveError(str(first["fatal"]))
        if first.get("event") != "ready":
            await self._stop()
            self.mode = "cold"
            self.info = {"event": "cold", "reason": first.get("message", "not ready")}
            return self.info
        self.info = first
        self._drain = asyncio.create_task(self._drain_lines())
        return first

    async def _next_event(self) -> dict | None:
        assert self._lines is not None
        async for line in self._lines:
            line = line.strip()
            if not line:
                continue
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                continue
        return None

    async def _drain_lines(self) -> None:
        with contextlib.suppress(Exception):
            async for _ in self._lines:  # heartbeats; the end means the parent is gone
                pass

    async def _request(self, request: dict) -> dict:
        """One request to the warm parent's socket: over a UNIX-socket channel of the node
        connection (no process started on the node: ~0.1 s less per request over SSH, more
        under load), else (a node that refuses such channels) through ``python -c CLIENT``."""
        assert self.info is not None
        from mambaconsole.agent.resolver import CLIENT

        payload = (json.dumps(request) + "\n").encode()
        if self._unix_channel:
            try:
                answer = await self.node.exchange_unix(self.info["socket"], payload, timeout=self.request_timeout)
                return _parse_answer(self.node, self.python, 0, answer, b"")
            except CommandTimeout as exc:
                raise ResolveError(f"warm resolver on {self.node.name}: {exc}") from None
            except NodeError:
                self._unix_channel = False  # refused (sshd AllowStreamLocalForwarding no): use the command
        try:
            res = await self.node.run([self.python, "-I", "-S", "-c", CLIENT, self.info["socket"]],
                                      input=payload, timeout=self.request_timeout)
        except NodeError as exc:
            raise ResolveError(f"warm resolver on {self.node.name}: {exc}") from None
        return _parse_answer(self.node, self.python, res.exit_status, res.stdout, res.stderr)

    async def resolve(self, argv: Sequence[str], env: Mapping[str, str] | None = None) -> dict:
        """Like :func:`resolve`, answered by a fresh fork of the warm parent."""
        async with self._lock:
            if self.mode == "cold":
                return await resolve(self.node, argv, python=self.python, env={**(self.env or {}), **(env or {})},
                                     cwd=self.cwd, planned_device=self.planned_device)
            for attempt in (1, 2):
                if not self.alive:
                    await self.start(argv)
                    if self.mode == "cold":
                        return await resolve(self.node, argv, python=self.python,
                                             env={**(self.env or {}), **(env or {})}, cwd=self.cwd, planned_device=self.planned_device)
                try:
                    return _answer(await self._request({"argv": list(argv), "env": dict(env or {})}))
                except ResolveError:
                    if attempt == 2 or self.alive:
                        raise
            raise AssertionError("unreachable")

    async def params(self) -> dict:
        """Like :func:`params`, from the warm parent."""
        async with self._lock:
            if self.mode == "cold":
                return await params(self.node, python=self.python, env=self.env, cwd=self.cwd)
            if not self.alive:
                await self.start()
            answer = await self._request({"params": True})
            if not isinstance(answer.get("params"), list):
                raise ResolveError("resolver answered an unexpected shape (params)")
            return answer

    async def _stop(self) -> None:
        if self._drain is not None:
            self._drain.cancel()
            with contextlib.suppress(BaseException):
                await self._drain
            self._drain = None
        if self._lines is not None:
            with contextlib.suppress(BaseException):
                await self._lines.aclose()
            self._lines = None
        self.info = None

    async def close(self) -> None:
        """Stop the warm parent (closing its channel ends it on the node)."""
        await self._stop()
