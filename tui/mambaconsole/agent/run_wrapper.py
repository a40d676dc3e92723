"""Runs one server run inside its tmux pane on the node (stdlib only, Python >= 3.8).

Written into the run folder by ``runs_agent.py start`` and started by tmux as
``PYTHON run_wrapper.py RUN_DIR`` (its argv holds no user value). It:

- reads ``argv.json`` (a JSON list of strings) and ``env.json`` (a JSON object of extra
  variables) from ``RUN_DIR`` and starts that argv directly (no shell: every element reaches
  the server as one literal argv element), in its own process group, with stdin from
  /dev/null, stdout and stderr into one pipe, ``PYTHONUNBUFFERED=1`` unless env.json sets it,
  and ``MAMBACONSOLE_RUN_ID``;
- copies every byte of that pipe to ``RUN_DIR/log`` (append, unbuffered, 0600) and to the pane;
  a write error (a full disk: ENOSPC, EDQUOT) never stops it: it keeps draining the pipe (the
  server must never block on, or die of, a pipe nobody reads), counts what it could not write
  (``log_lost_bytes``, ``log_error`` in status.json), and once the log takes writes again
  first writes one line saying how many bytes were lost there;
- forwards SIGINT, SIGTERM and SIGHUP to the server's process group;
- keeps ``RUN_DIR/status.json`` (replaced atomically) up to date::

    {"run_id": str, "state": "running" | "exited", "pid": int, "pgid": int,
     "pid_start_ticks": int,          # /proc/PID/stat field 22, guards against pid reuse
     "wrapper_pid": int, "started": float, "ended": float | null,  # unix seconds
     "exit_code": int | null,         # 128+N when killed by signal N
     "signal": str | null, "error": str | null,
     "log_lost_bytes": int,           # output bytes the log could not take (0: none)
     "log_error": str | null,         # the first write error, e.g. "No space left on device"
     ...fields written at creation}

  status.json is padded with spaces to 4 KiB, so that when the disk is full and the atomic
  replace fails, the record (the exit above all) can still be written over it in place.

- exits with the server's exit code, so the tmux pane (remain-on-exit) shows it.
"""

import json
import os
import select
import signal
import subprocess
import sys
import time

#: status.json is at least this long (trailing spaces): room to overwrite it in place
STATUS_PAD = 4096


def _write_json(path, obj):
    """Replace ``path`` with ``obj`` (JSON padded to STATUS_PAD bytes, 0600); True when written.
    Atomically (a temporary file, removed on any error: none pile up) when the disk allows;
    when it is full, over the existing file in place (its blocks are already allocated).
    Never raises."""
    text = json.dumps(obj, indent=1, sort_keys=True)
    data = (text.ljust(STATUS_PAD - 1) + "\n").encode()
    tmp = "%s.tmp.%d" % (path, os.getpid())
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            _write_all(fd, data)
        finally:
            os.close(fd)
        os.replace(tmp, path)
        return True
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
    try:  # full disk: write over the old record, when it is at least as long
        fd = os.open(path, os.O_WRONLY)
        try:
            size = os.fstat(fd).st_size
            if size < len(text) + 1:
                return False
            os.lseek(fd, 0, os.SEEK_SET)
            _write_all(fd, (text.ljust(size - 1) + "\n").encode())
        finally:
            os.close(fd)
        return True
    except OSError:
        return False


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


class Log:
    """The run's log, append only; a write that fails is counted, never raised."""

    def __init__(self, path):
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self.lost = 0
        self.unsaid = 0  # lost bytes the log does not say yet
        self.error = None

    def write(self, data):
        if self.unsaid:
            note = ("\n[mambaconsole] %d bytes of the server's output were lost here: the log could not "
                    "be written (%s)\n" % (self.unsaid, self.error)).encode()
            if not self._try(note):
                self._lose(data)
                return
            self.unsaid = 0
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self.fd, view):]
        except OSError as exc:
            self.error = self.error or (exc.strerror or str(exc))
            self._lose(view)

    def _try(self, data):
        try:
            _write_all(self.fd, data)
            return True
        except OSError:
            return False

    def _lose(self, data):
        self.lost += len(data)
        self.unsaid += len(data)

    def close(self):
        try:
            os.close(self.fd)
        except OSError:
            pass


def _start_ticks(pid):
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            data = f.read()
        return int(data[data.rindex(b")") + 2:].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def main():
    run_dir = sys.argv[1]
    with open(os.path.join(run_dir, "argv.json")) as f:
        argv = json.load(f)
    env_extra = {}
    env_path = os.path.join(run_dir, "env.json")
    if os.path.exists(env_path):
        with open(env_path) as f:
            env_extra = json.load(f)
    status_path = os.path.join(run_dir, "status.json")
    try:
        with open(status_path) as f:
            status = json.load(f)
    except (OSError, ValueError):
        status = {}
    status.setdefault("run_id", os.path.basename(os.path.normpath(run_dir)))
    env = dict(os.environ)
    env.pop("TMUX", None)
    status["pane"] = env.pop("TMUX_PANE", None) or status.get("pane")
    env.setdefault("PYTHONUNBUFFERED", "1")
    env.update({str(k): str(v) for k, v in env_extra.items()})
    env["MAMBACONSOLE_RUN_ID"] = status["run_id"]
    log = Log(os.path.join(run_dir, "log"))
    status.update(wrapper_pid=os.getpid(), started=time.time(), ended=None, exit_code=None,
                  signal=None, error=None, log_lost_bytes=0, log_error=None)
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, env=env, cwd=status.get("cwd") or None,
                                preexec_fn=os.setpgrp)
    except (OSError, ValueError) as exc:
        msg = "mambaconsole: cannot start %r: %s" % (argv[0] if argv else "", getattr(exc, "strerror", None) or exc)
        sys.stdout.write(msg + "\n")
        log.write((msg + "\n").encode("utf-8", "replace"))  # the run's own log says why
        status.update(log_lost_bytes=log.lost, log_error=log.error)
        status.update(state="exited", ended=time.time(), exit_code=127, error=msg)
        _write_json(status_path, status)
        return 127

    def forward(signum, frame):
        try:
            os.killpg(proc.pid, signum)
        except OSError:
            pass

    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, forward)
    status.update(state="running", pid=proc.pid, pgid=proc.pid, pid_start_ticks=_start_ticks(proc.pid))
    _write_json(status_path, status)

    fd = proc.stdout.fileno()
    pane_ok = True
    drain_until = None
    said_lost = 0  # log_lost_bytes last written to status.json
    said_at = 0.0
    while True:
        try:
            ready, _, _ = select.select([fd], [], [], 0.5)
        except InterruptedError:
            continue
        if ready:
            try:
                data = os.read(fd, 1 << 16)
            except InterruptedError:
                continue
            if not data:
                break
            log.write(data)
            if pane_ok:
                try:
                    os.write(1, data)
                except OSError:  # the pane is gone (window killed): keep logging
                    pane_ok = False
        if log.lost != said_lost and (not ready or time.monotonic() - said_at >= 1.0):
            # said at most once a second while output flows, and as soon as it pauses
            status.update(log_lost_bytes=log.lost, log_error=log.error)
            _write_json(status_path, status)
            said_lost, said_at = log.lost, time.monotonic()
        if not ready and proc.poll() is not None:
            # the server exited; children that inherited the pipe may still hold it open
            if drain_until is None:
                drain_until = time.monotonic() + 2.0
            elif time.monotonic() > drain_until:
                break
    rc = proc.wait()
    log.close()
    status.update(log_lost_bytes=log.lost, log_error=log.error)
    if rc < 0:
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = str(-rc)
        status.update(exit_code=128 - rc, signal=name)
    else:
        status.update(exit_code=rc)
    status.update(state="exited", ended=time.time())
    _write_json(status_path, status)
    if pane_ok:
        try:
            os.write(1, ("\n[mambaconsole] run %s exited with code %s\n" % (status["run_id"], status["exit_code"])).encode())
        except OSError:
            pass
    return status["exit_code"]


if __name__ == "__main__":
    sys.exit(main())
