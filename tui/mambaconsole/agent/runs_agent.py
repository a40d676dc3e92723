"""The run store on the node: start, list, adopt and stop server runs in tmux; the relaunch lock.

Stdlib only (Python >= 3.8). Sent on stdin to the node's python and run once per request::

    python3 -u - OP REQUEST_JSON

It prints exactly one JSON line ``{"ok": true, "result": ...}`` or
``{"ok": false, "error": "one line"}`` and exits 0 (1 on an unexpected crash).

The store is ``$MAMBACONSOLE_HOME`` (request ``home``, else the env var, else
``~/.mambaconsole``)::

    runs/<run-id>/argv.json    JSON list: the server's argv, exactly
    runs/<run-id>/env.json     JSON object: extra environment variables
    runs/<run-id>/status.json  see run_wrapper.py; plus "session", "window", "pane", "cwd",
                               "created", "node", "launched_by", "adopted", "log_path"
    runs/<run-id>/log          every byte the server wrote (adopted: pane scrollback + what follows)
    runs/<run-id>/wrapper.py   the wrapper tmux runs (run_wrapper.py)
    runs/<run-id>/group.json   a rank of a run across nodes: {"id": str, "rank": int, "nnodes": int,
                               "nodes": [host names as the launching console named them, in rank
                               order], "runs": [run id of each rank, or null while not started]}
    relaunch.lock              {"holder": "user@host", "pid": int, "since": float, "token": str,
                                "session_pid": int, "session_start_ticks": int, "session_kind": str}

Run ids are ``YYYYmmdd-HHMMSS-xxxx`` (UTC on the node, then 4 random hex digits): they sort by
start time to the second; ``list`` orders runs of one second by their records' creation time.

Ops and their results:

``start`` {argv, env, cwd, session, wrapper (source text), launched_by, wait_s, lock_token, group}
    -> the run record (below) once the wrapper reported the server's pid (or wait_s passed);
    ``group`` (a rank of a run across nodes) is written to ``group.json`` before the server starts.
    With ``lock_token`` (a launch under the relaunch lock) the lock must still hold that token
    and no server of the store may be live (running, starting, adopted and alive): else an
    error naming the live run; nothing is started. Without tmux on the node nothing is
    recorded (no run folder is left behind).
``list`` {adopt: false | true | "session", session, patterns: [[str, ...], ...], others: bool, current: bool}
    -> [run record, ...] oldest first; with ``adopt`` a server process not started by us whose
    argv contains one of the token sequences (default ``-m sglang.launch_server``, ``sglang
    serve``, ``-m mambaconsole.sim``) and that runs as this user (real uid) is recorded as an
    adopted run first: with ``true`` any (the user asked for it), with ``"session"`` only one
    running in a pane of the tmux session ``session`` (default ``sglang``: the store's own, the
    one the user named for this host); ``false`` adopts nothing. Another user's server is never
    adopted (so never stopped); with ``others`` the result is ``{"runs": [...], "others":
    [{"pid", "uid", "user", "argv", "started"}, ...], "not_adopted": [... same, plus
    "tmux_session"]}`` naming them and this user's servers left alone; with ``current`` the
    result is ``{"runs": [...], "current": run id or null}`` (plus ``others`` and ``not_adopted``
    when asked): the run a console follows (:func:`current_run`, the one place of that rule). An adopted run's id is the server's start time (UTC) and 4 hex digits derived
    from the boot id, pid and start time: the same process always gets the same id, and ids
    sort by when the servers started.
``get`` {run_id} -> run record.
``group`` {run_id, group} -> run record: ``group.json`` replaced (the launching console fills in
    the other ranks' run ids once they started).
``tail`` {run_id, bytes} -> {"text": str, "offset": int, "size": int}: the last ``bytes`` (at most
    1 MiB) of the run's log from the start of a line, UTF-8 with bad bytes replaced.
``note`` {run_id, peak_mem_mib} -> run record: what a console observed about the run, kept in
    ``runs/<run-id>/console.json`` (never in status.json, which the wrapper writes) and merged
    into the run record: ``peak_mem_mib`` (float, MiB) is the highest used memory of one GPU
    seen while the run was current; the larger of the stored and the new value is kept (two
    consoles on one node both note).
``stop`` {run_id, int_s, term_s, kill_s} -> run record after the server ended, with
    ``stopped`` {at (unix seconds), signals (names sent)} kept in ``runs/<run-id>/stopped.json``
    and merged into every later record of the run (so its end reads "stopped", not "dead"). Signals only a
    pid recorded in status.json whose /proc/PID/cmdline equals the recorded argv, whose start
    time matches and that runs as this user (real uid; root included): SIGINT, wait int_s; SIGTERM, wait term_s; SIGKILL, wait kill_s (seconds).
``lock`` {holder, pid, stale_s, break_since, console_pid} -> {"acquired": bool, "lock": {...}}:
    when not acquired, the holder's lock with ``holder_alive`` (its console's session process on
    the node still runs: the SSH connection's sshd process, or the local console, whose pid is
    ``console_pid``), ``age_s`` and ``stale`` (holder gone and older than stale_s; or an empty
    or unreadable lock file, at once: then ``unreadable`` says why). An agent whose parent was
    gone before it ran (the connection was cut) takes no lock: an error. A stale lock is taken over only when
    ``break_since`` equals its ``since`` (an explicit confirmation), never silently.
    ``unlock`` {token} -> bool.

A run record is status.json plus ``"run_id"``, ``"argv"``, ``"run_dir"``, ``"alive"`` (bool) and
``"state"``: ``starting``, ``running``, ``exiting`` (the server is gone, its wrapper is recording
the exit), ``exited`` (with ``exit_code``), ``lost`` (the server is gone and no exit was
recorded: its wrapper died too, or no wrapper reported within 30 s; written to status.json with
``error``), ``adopted`` (alive) or ``gone`` (adopted, ended; no exit code). ``never_started``
(bool): no server process ever ran (the program could not be started: exit 127 and ``error``;
or no wrapper reported). Plus ``log_size``, ``log_mtime`` and ``log_idle_s`` (seconds since the
log last grew, node clock) when the log exists.
"""

import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import time

DEFAULT_PATTERNS = [["-m", "sglang.launch_server"], ["sglang", "serve"], ["-m", "mambaconsole.sim"]]


class Fail(Exception):
    pass


#: the agent's parent when it started (before any work): its console's session hangs on it
_PARENT_AT_START = os.getppid()


def _private_dir(path):
    """Create ``path`` (and its parents) as a folder only this user can enter (0700); an
    existing one of ours is narrowed to 0700 (stores made by older versions were 0755)."""
    os.makedirs(path, mode=0o700, exist_ok=True)
    try:
        st = os.stat(path)
        if st.st_uid == os.getuid() and st.st_mode & 0o077:
            os.chmod(path, 0o700)
    except OSError:
        pass


def _home(req):
    home = req.get("home") or os.environ.get("MAMBACONSOLE_HOME") or "~/.mambaconsole"
    return os.path.abspath(os.path.expanduser(home))


def _runs_dir(req):
    home = _home(req)
    _private_dir(home)
    d = os.path.join(home, "runs")
    _private_dir(d)
    return d


def _read_json(path, default=None):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return default


def _write_json(path, obj):
    """Replace ``path`` atomically with ``obj`` as JSON, readable by this user only (0600).
    On a write error (a full disk) the temporary file is removed and the error raised: the
    old content stays whole and no ``*.tmp.*`` file is left behind."""
    text = json.dumps(obj, indent=1, sort_keys=True)
    if os.path.basename(path) == "status.json":
        text = text.ljust(4095)  # room for the wrapper to write over it on a full disk (run_wrapper.py)
    _write_private(path, (text + "\n").encode(), replace=True)


def _write_private(path, data, replace=True):
    """Write ``data`` (bytes) into ``path`` created 0600, through a temporary file in the same
    folder: ``replace`` puts it in place whatever was there (os.replace); otherwise it only
    appears if ``path`` does not exist yet (os.link; FileExistsError if it does). Never a
    partly written ``path``; the temporary file is gone afterwards in every case."""
    tmp = "%s.tmp.%d.%s" % (path, os.getpid(), os.urandom(3).hex())
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        if replace:
            os.replace(tmp, path)
        else:
            os.link(tmp, path)
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def _cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            data = f.read()
    except OSError:
        return None
    return [a.decode("utf-8", "surrogateescape") for a in data.split(b"\0")[:-1]]


def _stat(pid):
    """(ppid, start_ticks, state) from /proc/PID/stat, or None."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            data = f.read()
        fields = data[data.rindex(b")") + 2:].split()
        return int(fields[1]), int(fields[19]), fields[0].decode()
    except (OSError, ValueError, IndexError):
        return None


def _alive(pid, start_ticks=None, argv=None):
    """pid exists (not a zombie), started at start_ticks and runs argv (when given)."""
    if not pid:
        return False
    st = _stat(pid)
    if st is None or st[2] == "Z":
        return False
    if start_ticks is not None and st[1] != start_ticks:
        return False
    if argv is not None and not _same_argv(_cmdline(pid), argv):
        return False
    return True


def _same_argv(cmdline, argv):
    """/proc/PID/cmdline runs ``argv``: equal, or equal after argv[0] (a launcher such as a
    pyenv shim or ``env`` may exec the interpreter by its full path)."""
    if cmdline is None:
        return False
    return cmdline == argv or (len(cmdline) == len(argv) and cmdline[1:] == argv[1:])


def _uid(pid):
    """The real uid of pid (/proc/PID/status ``Uid:``), or None."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("Uid:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def _user_name(uid):
    try:
        import pwd

        return pwd.getpwuid(uid).pw_name
    except (ImportError, KeyError, TypeError):
        return None


def _boot_id():
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return ""


def _adopted_run_id(pid, start_ticks, started):
    """``YYYYmmdd-HHMMSS-xxxx``: the process's start time (UTC) and 4 hex digits of a hash of
    (boot id, pid, start ticks): the same process always gets the same id."""
    import hashlib

    key = ("%s:%d:%d" % (_boot_id(), pid, start_ticks)).encode()
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime(started)) + "-" + hashlib.sha1(key).hexdigest()[:4]


def _tmux(*args, check=True):
    if shutil.which("tmux") is None:
        raise Fail("tmux is not installed on the node")
    p = subprocess.run(["tmux"] + list(args), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    if check and p.returncode != 0:
        raise Fail("tmux %s: %s" % (args[0], p.stderr.decode("utf-8", "replace").strip() or "exit %d" % p.returncode))
    return p


def _new_run_id(runs):
    while True:
        rid = time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + os.urandom(2).hex()
        try:
            os.mkdir(os.path.join(runs, rid), 0o700)
            return rid
        except FileExistsError:
            continue


def _record(runs, rid):
    run_dir = os.path.join(runs, rid)
    st = _read_json(os.path.join(run_dir, "status.json"), {}) or {}
    argv = _read_json(os.path.join(run_dir, "argv.json"), None)
    rec = dict(st)
    noted = _read_json(os.path.join(run_dir, "console.json"), {})
    if isinstance(noted, dict) and isinstance(noted.get("peak_mem_mib"), (int, float)):
        rec["peak_mem_mib"] = noted["peak_mem_mib"]
    stopped = _read_json(os.path.join(run_dir, "stopped.json"), None)
    if isinstance(stopped, dict):
        rec["stopped"] = stopped
    rec.update(run_id=rid, run_dir=run_dir, argv=argv)
    group = _read_json(os.path.join(run_dir, "group.json"), None)
    if isinstance(group, dict):
        rec["group"] = group
    env = _read_json(os.path.join(run_dir, "env.json"), None)
    # the run's own extra environment (what it was started with; relaunch and resolution reuse it)
    rec["env"] = {str(k): str(v) for k, v in env.items()} if isinstance(env, dict) else {}
    rec.setdefault("log_path", os.path.join(run_dir, "log"))
    pid = st.get("pid")
    alive = _alive(pid, st.get("pid_start_ticks"), argv) if pid else False
    rec["alive"] = alive
    _log_facts(rec)
    if st.get("adopted"):
        rec["state"] = "adopted" if alive else "gone"
    elif st.get("state") == "exited":
        rec["state"] = "exited"
        # the wrapper could not start the program at all (exit 127, ``error``): it never ran
        rec["never_started"] = not pid
    elif st.get("state") == "lost":
        rec["state"] = "lost"
    elif alive:
        rec["state"] = "running"
    else:
        wpid = st.get("wrapper_pid")
        if wpid and _alive(wpid):
            # the server is gone and its wrapper is recording the exit: never "running"
            rec["state"] = "exiting" if pid else "starting"
        elif not wpid and time.time() - float(st.get("created") or 0) < START_BOUND_S:
            rec["state"] = "starting"
        else:
            rec = _mark_gone(run_dir, st, rec)
    return rec


#: seconds a new run may take until its wrapper reports; after that it never started
START_BOUND_S = 30.0


def _mark_gone(run_dir, st, rec):
    """The wrapper is gone without recording an exit: write it down once (status.json) as
    ``lost``, so every console shows the same truth; ``never_started`` when no wrapper ever
    reported within START_BOUND_S (no server pid was ever recorded)."""
    now = time.time()
    state = "lost"
    if st.get("pid"):
        err = ("the server process (pid %s) is gone and no exit status was recorded (its wrapper was "
               "killed too, or the node rebooted)" % st["pid"])
    else:
        err = ("no wrapper reported within %d s of the launch (tmux could not start it?)" % START_BOUND_S)
    new = dict(st)
    new.update(state=state, ended=st.get("ended") or now, error=st.get("error") or err, marked_at=now,
               never_started=not st.get("pid"))
    try:
        _write_json(os.path.join(run_dir, "status.json"), new)
    except OSError:
        pass
    rec = dict(rec)
    rec.update(new)
    rec["state"] = state
    return rec


def _log_facts(rec):
    """``log_size`` (bytes), ``log_mtime`` and ``log_idle_s`` (seconds since the log last grew,
    on the node's clock) of the run's log; absent when the log does not exist."""
    try:
        st = os.stat(rec["log_path"])
    except OSError:
        return
    rec.update(log_size=st.st_size, log_mtime=st.st_mtime, log_idle_s=max(0.0, time.time() - st.st_mtime))


def op_start(req):
    runs = _runs_dir(req)
    argv = req["argv"]
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
        raise Fail("argv must be a non-empty list of strings")
    env = req.get("env") or {}
    session = req.get("session") or "sglang"
    if req.get("lock_token") is not None:
        _check_exclusive(req, runs)
    if shutil.which("tmux") is None:
        raise Fail("tmux is not installed on the node: install it (apt install tmux); nothing was started")
    rid = _new_run_id(runs)
    run_dir = os.path.join(runs, rid)
    try:
        _write_json(os.path.join(run_dir, "argv.json"), argv)
        _write_json(os.path.join(run_dir, "env.json"), env)
        if isinstance(req.get("group"), dict):
            _write_json(os.path.join(run_dir, "group.json"), req["group"])
        os.close(os.open(os.path.join(run_dir, "log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600))
        wrapper = os.path.join(run_dir, "wrapper.py")
        _write_private(wrapper, req["wrapper"].encode())
        _write_json(os.path.join(run_dir, "status.json"), {
            "run_id": rid, "state": "starting", "created": time.time(), "session": session,
            "window": rid, "cwd": req.get("cwd"), "node": socket.gethostname(),
            "launched_by": req.get("launched_by"), "adopted": False,
        })
        _start_in_tmux(session, rid, run_dir, wrapper)
    except (Fail, OSError) as exc:
        shutil.rmtree(run_dir, ignore_errors=True)  # nothing ran: no phantom "starting" run
        if isinstance(exc, Fail):
            raise
        raise Fail("cannot record the run in %s: %s; nothing was started" % (runs, exc.strerror or exc))
    # the wrapper records its pane (TMUX_PANE) and pid in status.json itself; only wait for it
    st_path = os.path.join(run_dir, "status.json")
    deadline = time.time() + float(req.get("wait_s", 10))
    while time.time() < deadline:
        if (_read_json(st_path, {}) or {}).get("wrapper_pid"):
            break
        time.sleep(0.02)
    return _record(runs, rid)


def _start_in_tmux(session, rid, run_dir, wrapper):
    cmd = [sys.executable, wrapper, run_dir]
    target = "=%s:=%s" % (session, rid)
    remain = [";", "set-option", "-w", "-t", target, "remain-on-exit", "on"]
    if _tmux("has-session", "-t", "=" + session, check=False).returncode != 0:
        # A tmux server that is just starting can miss the exit of a very short-lived first
        # command (the pane shows no exit status): open the session on a placeholder, then
        # respawn the pane with the wrapper once the server is up.
        placeholder = [sys.executable, "-c", "import time; time.sleep(3600)"]
        p = _tmux("new-session", "-d", "-s", session, "-n", rid, "-x", "220", "-y", "50", "--", *placeholder,
                  check=False)
        if p.returncode == 0:
            _tmux("set-option", "-w", "-t", target, "remain-on-exit", "on", ";",
                  "respawn-pane", "-k", "-t", target, "--", *cmd)
            cmd = None
        elif b"duplicate session" not in p.stderr:
            raise Fail("tmux new-session: %s" % p.stderr.decode("utf-8", "replace").strip())
    if cmd is not None:  # (the set-option runs in the same tmux command: no race with a quick exit)
        _tmux("new-window", "-d", "-t", "=%s:" % session, "-n", rid, "--", *(cmd + remain))


def _check_exclusive(req, runs):
    """A start under the relaunch lock (``lock_token``): the lock must still be this request's
    and no server of this store may be live (running, starting, or adopted and alive); else
    Fail naming the live run and what to do."""
    if not _holds_lock(req):
        raise Fail("the relaunch lock is no longer this console's (broken by another console?); nothing "
                   "was started")
    for rid in sorted(d for d in os.listdir(runs) if not d.startswith(".")):
        if not os.path.isdir(os.path.join(runs, rid)):
            continue
        rec = _record(runs, rid)
        if rec.get("alive") or rec.get("state") == "starting":
            who = rec.get("launched_by") or ("adopted" if rec.get("adopted") else "unknown")
            raise Fail("a server is already live on this node: run %s (%s, pid %s, launched by %s); stop it "
                       "first (mambaconsole stop HOST %s) or relaunch it from its console; nothing was started"
                       % (rid, rec.get("state"), rec.get("pid") or "not yet known", who, rid))


def op_get(req):
    runs = _runs_dir(req)
    rid = req["run_id"]
    if not rid or "/" in rid or rid.startswith(".") or not os.path.isdir(os.path.join(runs, rid)):
        raise Fail("no run %r on this node (see: mambaconsole runs HOST)" % rid)
    return _record(runs, rid)


def op_group(req):
    rec = op_get(req)
    if not isinstance(req.get("group"), dict):
        raise Fail("group must be an object")
    _write_json(os.path.join(rec["run_dir"], "group.json"), req["group"])
    return op_get(req)


#: the most a ``tail`` request returns, bytes
TAIL_MAX = 1 << 20


def op_tail(req):
    rec = op_get(req)
    want = max(0, min(int(req.get("bytes") or 65536), TAIL_MAX))
    try:
        with open(rec["log_path"], "rb") as f:
            size = os.fstat(f.fileno()).st_size
            start = max(0, size - want)
            f.seek(start)
            data = f.read(want)
    except OSError as exc:
        raise Fail("cannot read the log of run %s: %s" % (rec["run_id"], exc.strerror or exc))
    if start > 0:  # from the start of a line: drop the cut first line
        nl = data.find(b"\n")
        start, data = (start + nl + 1, data[nl + 1:]) if nl >= 0 else (start + len(data), b"")
    return {"text": data.decode("utf-8", "replace"), "offset": start, "size": size}


def op_note(req):
    runs = _runs_dir(req)
    rid = req["run_id"]
    if not rid or "/" in rid or rid.startswith(".") or not os.path.isdir(os.path.join(runs, rid)):
        raise Fail("no run %r on this node (see: mambaconsole runs HOST)" % rid)
    path = os.path.join(runs, rid, "console.json")
    cur = _read_json(path, {})
    cur = cur if isinstance(cur, dict) else {}
    peak = req.get("peak_mem_mib")
    if isinstance(peak, (int, float)) and not isinstance(peak, bool):
        old = cur.get("peak_mem_mib")
        cur["peak_mem_mib"] = max(float(peak), float(old)) if isinstance(old, (int, float)) else float(peak)
    _write_json(path, cur)
    return _record(runs, rid)


def _matches(argv, patterns):
    """argv is a server command: its program is a python (or ``sglang``) and it holds one of
    the token sequences. Launchers around it (timeout, env, nohup, a shell) do not match, so
    the process adopted is the server itself."""
    if not argv:
        return False
    prog = os.path.basename(argv[0])
    for pat in patterns:
        n = len(pat)
        if pat[0] == "-m":
            if not prog.startswith("python"):
                continue
            for i in range(1, len(argv) - n + 1):
                if argv[i:i + n] == pat:
                    return True
        elif prog == pat[0] and argv[1:n] == pat[1:]:
            return True
        elif prog.startswith("python") and n >= 1:
            # `python /path/bin/sglang serve ...` (a console script run by its interpreter)
            for i in range(1, len(argv) - n + 1):
                if os.path.basename(argv[i]) == pat[0] and argv[i + 1:i + n] == pat[1:]:
                    return True
    return False


def _panes():
    if shutil.which("tmux") is None:
        return []
    p = _tmux("list-panes", "-a", "-F", "#{pane_id}\t#{pane_pid}\t#{session_name}\t#{window_name}\t#{pane_dead}",
              check=False)
    out = []
    for line in p.stdout.decode("utf-8", "replace").splitlines():
        parts = line.split("\t")
        if len(parts) == 5 and parts[1].isdigit():
            out.append({"pane": parts[0], "pid": int(parts[1]), "session": parts[2], "window": parts[3],
                        "dead": parts[4] == "1"})
    return out


def _adopt(runs, records, patterns, session=None):
    """Adopt this user's servers not started by the store (all of them; with ``session`` only
    those running in a pane of that tmux session). Returns (new run ids, other users' servers,
    this user's servers left alone)."""
    known = set()
    for r in records:
        if r.get("pid"):
            known.add((r["pid"], r.get("pid_start_ticks")))
        if r.get("wrapper_pid"):
            known.add((r["wrapper_pid"], None))
    known_pids = {k[0] for k in known}
    me = os.getpid()
    candidates = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        pid = int(name)
        if pid == me:
            continue
        argv = _cmdline(pid)
        if argv and _matches(argv, patterns):
            candidates[pid] = argv
    # keep only the topmost matching process of a tree (a server's helpers may match too)
    parents = {}
    for pid in list(candidates):
        st = _stat(pid)
        parents[pid] = st
    top = []
    for pid in candidates:
        ancestor = parents[pid][0] if parents[pid] else 0
        nested = False
        seen = 0
        while ancestor > 1 and seen < 64:
            if ancestor in candidates or ancestor in known_pids:
                nested = True
                break
            st = _stat(ancestor)
            ancestor = st[0] if st else 0
            seen += 1
        if not nested and parents[pid] and (pid, parents[pid][1]) not in known and pid not in known_pids:
            top.append(pid)
    me_uid = os.getuid()
    others = []
    mine = []
    for pid in top:
        uid = _uid(pid)
        if uid == me_uid:
            mine.append(pid)
        else:
            st = _stat(pid)
            others.append({"pid": pid, "uid": uid, "user": _user_name(uid), "argv": candidates[pid],
                           "started": _started_at(st[1]) if st else None})
    if not mine:
        return [], others, []
    panes = {p["pid"]: p for p in _panes()}
    new = []
    left = []
    for pid in mine:
        argv = candidates[pid]
        st = _stat(pid)
        started = _started_at(st[1]) if st else None
        if st is None or started is None:
            continue  # gone meanwhile (or no /proc/uptime): nothing to name it by
        pane = None
        a, seen = pid, 0
        while a > 1 and seen < 64:
            if a in panes:
                pane = panes[a]
                break
            s = _stat(a)
            a = s[0] if s else 0
            seen += 1
        if session is not None and (pane is None or pane["session"] != session):
            # not in this store's tmux session: another console's, a script's; only on request
            left.append({"pid": pid, "uid": me_uid, "user": _user_name(me_uid), "argv": argv, "started": started,
                         "tmux_session": pane["session"] if pane else None})
            continue
        rid = _adopted_run_id(pid, st[1], started)
        run_dir = os.path.join(runs, rid)
        if os.path.exists(run_dir):
            continue  # this very process was adopted before (its record says whether it lives)
        # built in a hidden folder, then renamed into place: a console listing at the same
        # time never sees half a record, and of two adopting at once exactly one wins
        tmp = os.path.join(runs, ".adopt-%s-%s" % (rid, os.urandom(3).hex()))
        os.mkdir(tmp, 0o700)
        log_path = os.path.join(run_dir, "log")
        status = {"run_id": rid, "state": "running", "adopted": True, "pid": pid, "pgid": None,
                  "pid_start_ticks": st[1], "created": time.time(),
                  "started": started, "ended": None, "exit_code": None, "uid": me_uid,
                  "node": socket.gethostname(), "cwd": _cwd(pid), "log_path": log_path}
        try:
            status["pgid"] = os.getpgid(pid)
        except OSError:
            pass
        _write_json(os.path.join(tmp, "argv.json"), argv)
        _write_json(os.path.join(tmp, "env.json"), {})
        if pane is not None:
            status.update(session=pane["session"], window=pane["window"], pane=pane["pane"],
                          log_source="tmux pane %s" % pane["pane"])
            cap = _tmux("capture-pane", "-p", "-J", "-S", "-", "-E", "-", "-t", pane["pane"], check=False)
            _write_private(os.path.join(tmp, "log"), cap.stdout.rstrip(b"\n") + b"\n" if cap.stdout.strip() else b"")
        else:
            out = None
            try:
                out = os.readlink("/proc/%d/fd/1" % pid)
            except OSError:
                pass
            if out and out.startswith("/") and os.path.isfile(out):
                status.update(log_path=out, log_source="file %s (the process's stdout)" % out)
            else:
                _write_private(os.path.join(tmp, "log"), b"")
                status.update(log_source="none: not in tmux and stdout is not a file")
        _write_json(os.path.join(tmp, "status.json"), status)
        try:
            os.rename(tmp, run_dir)
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)  # another console adopted it first
            continue
        if pane is not None:
            _tmux("pipe-pane", "-o", "-t", pane["pane"], "cat >> " + shlex.quote(log_path), check=False)
        new.append(rid)
    return new, others, left


def _started_at(start_ticks):
    try:
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        hz = os.sysconf("SC_CLK_TCK")
        return time.time() - uptime + start_ticks / hz
    except (OSError, ValueError):
        return None


def _cwd(pid):
    try:
        return os.readlink("/proc/%d/cwd" % pid)
    except OSError:
        return None


def _order(rec):
    """Oldest first: by the second in the run id, then (two runs started in one second) by
    the record's creation time, then by id."""
    try:
        created = float(rec.get("created") or 0)
    except (TypeError, ValueError):
        created = 0.0
    return (rec["run_id"][:15], created, rec["run_id"])


def op_list(req):
    runs = _runs_dir(req)
    ids = [d for d in os.listdir(runs) if not d.startswith(".") and os.path.isdir(os.path.join(runs, d))]
    records = [_record(runs, rid) for rid in ids]
    others, left = [], []
    mode = req.get("adopt")
    if mode:
        live = [r for r in records if r["alive"] or r["state"] in ("starting", "running")]
        session = (req.get("session") or "sglang") if mode == "session" else None
        new, others, left = _adopt(runs, live, req.get("patterns") or DEFAULT_PATTERNS, session)
        records += [_record(runs, rid) for rid in new]
    records.sort(key=_order)
    if req.get("others") or req.get("current"):
        out = {"runs": records}
        if req.get("others"):
            out.update(others=others, not_adopted=left)
        if req.get("current"):
            out["current"] = current_run(records)
        return out
    return records


def current_run(records):
    """The id of the run a console follows (None without runs): the newest live run a console
    launched, else the newest live adopted one, else the newest; newest by ``started`` (unix
    seconds; a record without one sorts first), then by id."""
    def key(rec):
        started = rec.get("started")
        ok = isinstance(started, (int, float)) and not isinstance(started, bool)
        return (float(started) if ok else 0.0, rec["run_id"])

    ordered = sorted(records, key=key)
    live = [r for r in ordered if r.get("alive")]
    ours = [r for r in live if not r.get("adopted")]
    pick = (ours or live or ordered or [None])[-1]
    return pick["run_id"] if pick else None


def _wait_gone(pid, start_ticks, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if not _alive(pid, start_ticks):
            return True
        time.sleep(0.05)
    return not _alive(pid, start_ticks)


def op_stop(req):
    import signal

    rec = op_get(req)
    runs = _runs_dir(req)
    pid = rec.get("pid")
    if not pid or not rec["alive"]:
        if rec["state"] in ("exited", "gone", "lost", "exiting"):
            return rec
        raise Fail("run %s has no live server process to stop (state %s)" % (rec["run_id"], rec["state"]))
    ticks = rec.get("pid_start_ticks")
    # the pid must still be the process we recorded: same argv, same start time
    if not _same_argv(_cmdline(pid), rec["argv"]) or (ticks is not None and _stat(pid)[1] != ticks):
        raise Fail("pid %d no longer runs the argv recorded for run %s; not signalling it" % (pid, rec["run_id"]))
    uid = _uid(pid)
    if uid != os.getuid():
        raise Fail("run %s is another user's server (pid %d, uid %s%s); not signalling it"
                   % (rec["run_id"], pid, uid, "/" + (_user_name(uid) or "?")))
    group = rec.get("pgid") == pid
    # said before the first signal: the server's exit is then this stop's doing, whatever
    # its exit code or last log lines (SGLang may print a traceback on SIGINT)
    stop_path = os.path.join(runs, rec["run_id"], "stopped.json")
    stopped = {"at": time.time(), "signals": []}
    _write_json(stop_path, stopped)
    steps = [(signal.SIGINT, float(req.get("int_s", 30))), (signal.SIGTERM, float(req.get("term_s", 10))),
             (signal.SIGKILL, float(req.get("kill_s", 5)))]
    sent = []
    for sig, wait in steps:
        if not _alive(pid, ticks):
            break
        try:
            if group:
                os.killpg(pid, sig)
            else:
                os.kill(pid, sig)
        except ProcessLookupError:
            break
        except PermissionError as exc:
            raise Fail("cannot signal pid %d: %s" % (pid, exc.strerror))
        sent.append(sig.name)
        stopped["signals"] = sent
        _write_json(stop_path, stopped)
        if _wait_gone(pid, ticks, wait):
            break
    # let the wrapper record the exit code
    st_path = os.path.join(runs, rec["run_id"], "status.json")
    deadline = time.time() + 5
    while not rec.get("adopted") and time.time() < deadline:
        if (_read_json(st_path, {}) or {}).get("state") == "exited":
            break
        time.sleep(0.02)
    if rec.get("adopted"):
        st = _read_json(st_path, {}) or {}
        st.update(ended=time.time())
        _write_json(st_path, st)
    out = _record(runs, rec["run_id"])
    out["signals_sent"] = sent
    return out


def _comm(pid):
    try:
        with open("/proc/%d/comm" % pid) as f:
            return f.read().strip()
    except OSError:
        return None


def _session(req):
    """The process whose life is the requesting console's session on this node, as
    ``(pid, start_ticks, kind)``: the console itself when it runs on this machine (request
    ``console_pid``, which must be one of the agent's ancestors), else the nearest ``sshd``
    ancestor (the SSH connection's session process: it ends when the connection does).

    Raises Fail when neither can be named: the agent's parent was already gone when it
    started (re-parented to PID 1 or a subreaper: the connection was cut while the request
    was on its way), so a lock taken now would name a holder that never ends."""
    first = _PARENT_AT_START
    if first <= 1 or os.getppid() != first:
        raise Fail("this console's connection to the node closed before the request ran (its agent was "
                   "orphaned); nothing was locked: try again")
    want = req.get("console_pid")
    chain = []
    pid = first
    for _ in range(64):
        st = _stat(pid)
        if st is None:
            break
        chain.append((pid, st))
        if st[0] <= 1:
            break
        pid = st[0]
    for pid, st in chain:
        if want and pid == want:
            return pid, st[1], "process"
    for pid, st in chain:
        comm = _comm(pid) or ""
        if comm.startswith("sshd") or comm.startswith("dropbear"):
            return pid, st[1], "ssh"
    raise Fail("cannot name this console's session on the node (no sshd process among the agent's "
               "ancestors %s, and the console does not run here); nothing was locked"
               % ", ".join(str(p) for p, _ in chain[:8]))


def _holder_alive(cur):
    """The lock's holder session still runs: its pid is alive (not PID 1, which lives as long
    as the node), started at the recorded clock tick, on the same boot."""
    sp = cur.get("session_pid")
    if not isinstance(sp, int) or isinstance(sp, bool) or sp <= 1 or cur.get("session_start_ticks") is None:
        return False
    if cur.get("boot_id") and cur.get("boot_id") != _boot_id():
        return False
    return _alive(sp, cur.get("session_start_ticks"))


def _lock_view(cur, path, stale_s):
    """The lock as another console sees it: no token; ``holder_alive`` (its session process still
    runs), ``age_s``, and ``stale`` (holder gone and older than stale_s, or a lock file that is
    empty or unreadable: breakable, with confirmation)."""
    view = dict(cur)
    view.pop("token", None)
    view["path"] = path
    alive = _holder_alive(cur)
    try:
        age = time.time() - float(cur.get("since", 0))
    except (TypeError, ValueError):
        age = float("inf")
    broken = bool(cur.get("unreadable"))
    view.update(holder_alive=alive, age_s=age, stale_after_s=stale_s,
                stale=broken or (not alive and age >= stale_s))
    return view


def _read_lock(path):
    """The lock file's content, or a stand-in ``{"unreadable": why, "since": mtime}`` for a
    file that is empty, not JSON or not an object (a full disk, an old console cut off while
    writing it: locks are written whole since, so nothing is half-way). None: no lock."""
    try:
        with open(path, "rb") as f:
            raw = f.read(1 << 16)
        mtime = os.stat(path).st_mtime
    except FileNotFoundError:
        return None
    except OSError as exc:
        return {"holder": "unknown", "unreadable": exc.strerror or str(exc), "since": time.time()}
    try:
        cur = json.loads(raw.decode("utf-8"))
    except ValueError:
        cur = None
    if not isinstance(cur, dict) or not isinstance(cur.get("since"), (int, float)):
        why = "empty" if not raw.strip() else "not a lock record"
        return {"holder": "unknown (%s lock file)" % why, "unreadable": why, "since": mtime}
    return cur


def op_lock(req):
    """Atomic lock file, written whole (a temporary file, then os.link: it exists complete or
    not at all). The holder is named by its session process (pid, start ticks, boot id: see
    _session), never by a bare pid. A held lock is never taken silently: when its holder's
    session is gone and it is older than ``stale_s``, or the file is empty or unreadable, it is
    reported ``stale``, and only a request with ``break_since`` equal to that lock's ``since``
    (the user confirmed breaking exactly that lock) takes it over, after checking it is still
    stale."""
    home = _home(req)
    _private_dir(home)
    path = os.path.join(home, "relaunch.lock")
    stale_s = float(req.get("stale_s", 900))
    spid, sticks, skind = _session(req)
    data = {"holder": req.get("holder") or "unknown", "pid": req.get("pid"), "since": time.time(),
            "token": os.urandom(8).hex(), "node_pid": os.getpid(), "session_pid": spid,
            "session_start_ticks": sticks, "session_kind": skind, "boot_id": _boot_id()}
    for _ in range(3):
        try:
            _write_private(path, json.dumps(data).encode(), replace=False)
        except FileExistsError:
            cur = _read_lock(path)
            if cur is None:
                continue  # released meanwhile
            view = _lock_view(cur, path, stale_s)
            try:
                confirmed = req.get("break_since") is not None and \
                    float(req["break_since"]) == float(cur.get("since", -1))
            except (TypeError, ValueError):
                confirmed = False
            if not (view["stale"] and confirmed):
                return {"acquired": False, "lock": view}
            # confirmed and still stale: move it aside atomically, keep it for the record
            try:
                os.rename(path, path + ".broken")
            except FileNotFoundError:
                pass
            data["broke"] = {k: cur.get(k) for k in ("holder", "pid", "since")}
            continue
        except OSError as exc:
            raise Fail("cannot write the relaunch lock %s: %s; nothing was locked (free space in %s)"
                       % (path, exc.strerror or exc, home))
        return {"acquired": True, "lock": data}
    raise Fail("could not take the relaunch lock %s" % path)


def _holds_lock(req):
    cur = _read_lock(os.path.join(_home(req), "relaunch.lock"))
    return isinstance(cur, dict) and cur.get("token") is not None and cur.get("token") == req.get("lock_token")


def op_unlock(req):
    path = os.path.join(_home(req), "relaunch.lock")
    cur = _read_lock(path)
    if cur is not None and cur.get("token") is not None and cur.get("token") == req.get("token"):
        os.unlink(path)
        return True
    return False


OPS = {"start": op_start, "get": op_get, "group": op_group, "tail": op_tail, "note": op_note, "list": op_list, "stop": op_stop, "lock": op_lock, "unlock": op_unlock}


def answer(op, req):
    """The answer to one request: ``{"ok": true, "result": ...}`` or ``{"ok": false, "error":
    "one line"}`` (what :func:`main` prints; ``agent/first_look.py`` calls it too)."""
    try:
        return {"ok": True, "result": OPS[op](req)}
    except Fail as exc:
        return {"ok": False, "error": str(exc)}
    except KeyError as exc:
        return {"ok": False, "error": "bad request: missing %s" % exc}
    except OSError as exc:  # a full disk, a store folder that is not ours: one line, not a traceback
        return {"ok": False, "error": "%s: %s%s" % (op, exc.strerror or exc, " (%s)" % exc.filename if exc.filename else "")}


def main():
    op = sys.argv[1]
    req = json.loads(sys.argv[2]) if len(sys.argv) > 2 else {}
    sys.stdout.write(json.dumps(answer(op, req)) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
