"""The run's own environment (its ``env.json``) and working folder (``cwd``) everywhere the
console runs something for it: the resolution / pre-flight, the source view and the relaunch.

Before: the resolver ran the node's python with the host settings' environment only, so a server
started with ``--env PYTHONPATH=...`` (the torchvision stub here) had every pre-flight refused
("No module named 'torchvision'"), and a relaunch dropped the run's environment and folder."""

from __future__ import annotations

import json
import sys

import pytest
from fixtures.sglang_venvs import MODELS, STUB, sglang_python
from mambaconsole.node.local import LocalNode
from mambaconsole.node.runs import RunStore
from mambaconsole.session import relaunch
from mambaconsole.session.feed import Feed
from mambaconsole.session.settings import HostSettings

SLEEP = [sys.executable, "-c", "import time; time.sleep(60)"]


async def _start(store: RunStore, env: dict, cwd: str):
    lock = await store.acquire_lock()
    try:
        return await store.start(SLEEP, env=env, cwd=cwd, lock=lock)
    finally:
        await store.release_lock(lock)


async def test_a_runs_env_and_folder_reach_the_console(node_home, tmp_path):
    env = {"PYTHONPATH": "/somewhere/stub", "SGLANG_USE_CPU_ENGINE": "1"}
    async with LocalNode() as node:
        feed = Feed(node, HostSettings(python=sys.executable, env={"HOST_ONLY": "1", "SGLANG_USE_CPU_ENGINE": "0"},
                                       workdir="/settings/folder"), adopt=False)
        try:
            run = await _start(feed.store, env, str(tmp_path))
            listed = await feed.runs()
            info = next(r for r in listed.runs if r.run_id == run.run_id)
            assert dict(info.env) == env
            assert info.cwd == str(tmp_path)
            got_env, got_cwd = feed.run_environment(info)
            # the run's own values win over the host's; the host's others stay
            assert got_env == {"HOST_ONLY": "1", "PYTHONPATH": "/somewhere/stub", "SGLANG_USE_CPU_ENGINE": "1"}
            assert got_cwd == str(tmp_path)
            # no run: the settings'
            assert feed.run_environment(None) == ({"HOST_ONLY": "1", "SGLANG_USE_CPU_ENGINE": "0"}, "/settings/folder")
            await feed.store.stop(run.run_id)
        finally:
            await feed.close()


async def test_relaunch_keeps_the_runs_env_and_folder(node_home, tmp_path):
    """``R`` (and the editor's relaunch) starts the new run with the old run's env.json and cwd,
    not the host settings' (which have neither here)."""
    env = {"PYTHONPATH": "/somewhere/stub", "HF_HUB_OFFLINE": "1"}
    async with LocalNode() as node:
        feed = Feed(node, HostSettings(python=sys.executable), adopt=False)
        try:
            run = await _start(feed.store, env, str(tmp_path))
            old = next(r for r in (await feed.runs()).runs if r.run_id == run.run_id)
            new_id = await relaunch.relaunch(feed, old, list(old.argv), lambda *a: None)
            run_dir = node_home / "runs" / new_id
            assert json.loads((run_dir / "env.json").read_text()) == env
            assert json.loads((run_dir / "status.json").read_text())["cwd"] == str(tmp_path)
            await feed.store.stop(new_id)
        finally:
            await feed.close()


@pytest.mark.sglang
async def test_resolution_runs_with_the_runs_env_and_folder(node_home, tmp_path):
    """The resolver venv imports sglang only with the torchvision stub on PYTHONPATH: without
    the run's env the resolution fails on that import; with it, it resolves; a relative
    --model-path resolves in the run's folder."""
    py = sglang_python("0.5.23")
    model = tmp_path / "m"
    model.mkdir()
    (model / "config.json").write_text((MODELS["qwen3-next"] / "config.json").read_text())
    args = ["--model-path", "m", "--device", "cpu", "--max-mamba-cache-size", "16",
            "--mamba-radix-cache-strategy", "no_buffer", "--disable-overlap-schedule"]
    async with LocalNode() as node:
        feed = Feed(node, HostSettings(python=str(py)), adopt=False)
        try:
            try:
                bare = json.dumps(await feed.resolve(args))
            except Exception as exc:  # noqa: BLE001 - the resolver could not even import sglang
                bare = str(exc)
            assert "torchvision" in bare
            res = await feed.resolve(args, env={"PYTHONPATH": str(STUB), "HF_HUB_OFFLINE": "1"}, cwd=str(tmp_path))
            assert res["ok"] and res["error"] is None, res["error"]
            assert res["fields"]["max_mamba_cache_size"]["value"] == 16
            assert res["fields"]["model_path"]["value"] == "m"
        finally:
            await feed.close()


def test_in_folder_keeps_each_value_one_argument():
    from mambaconsole.node.base import command_line, in_folder

    cmd = in_folder(["python3", "-c", "print(1)"], "/tmp/a b; rm -rf x")
    assert cmd[:3] == ["sh", "-c", 'cd -- "$1" && shift && exec "$@"']
    assert cmd[4] == "/tmp/a b; rm -rf x"
    assert in_folder(["x"], None) == ["x"]
    assert "'/tmp/a b; rm -rf x'" in command_line(cmd)



async def test_the_gpu_reader_runs_with_the_servers_python(node_home):
    """The GPU reader is the agent run by the node's --python (settings.python), where SGLang's
    nvidia-ml-py is, not the python the stdlib agents use (agent_python; here one that does not
    exist, so reading with it would fail)."""
    async with LocalNode() as node:
        feed = Feed(node, HostSettings(python=sys.executable), agent_python="/nonexistent/python3", adopt=False)
        try:
            snap = await feed.gpu()
        finally:
            await feed.close()
    assert not snap.available
    # this test's python has pynvml (a dependency of the project): the reader got past the import
    # and says why NVML gave no GPU (no driver on this machine)
    assert "not importable" not in snap.reason and "pynvml" in snap.reason, snap.reason


async def test_breaking_a_stale_lock_relaunches_with_the_edited_environment(node_home, no_config):
    """A relaunch refused by another console's stale lock, retried with 'Break and relaunch':
    the retry starts the edited argv with the edited environment and folder, not the old run's."""
    from fixtures.console import console_for
    from mambaconsole.ui import messages as M
    from mambaconsole.ui.confirm import ConfirmScreen

    app = console_for(LocalNode(), str(node_home))
    calls = []
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        app.relaunch_loop = lambda *a, **k: calls.append((a, k))
        edited = ({"PYTHONPATH": "/edited"}, "/edited/folder")
        app.post_message(M.RelaunchDone(None, "held", lock={"stale": True, "holder": "eve@host"}, argv=["x"],
                                        run_env=edited))
        for _ in range(50):
            await pilot.pause(0.05)
            if isinstance(app.screen, ConfirmScreen):
                break
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await pilot.pause(0.2)
    assert calls and calls[0][1].get("run_env") == edited, calls
