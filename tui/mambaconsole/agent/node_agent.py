"""The node agent: GPU samples, GPU processes and a run's log, streamed as JSON lines.

Stdlib only (Python >= 3.8; pynvml from nvidia-ml-py is used when importable). Nothing is
installed on the node: the console sends this file on stdin to the node's python::

    python3 -u - [--interval S] [--gpu auto|pynvml|nvidia-smi|sim|none] [--sim-file PATH]
                 [--follow PATH | --run RUN_ID [--home DIR]] [--offset N] [--max-line BYTES]
                 [--tail-bytes N [--head-bytes N] [--head-until TEXT]] [--once]

Every stdout line is one JSON object (ASCII; ``ensure_ascii``) with a ``"type"``. Times are unix
seconds on the node's clock, memory in MiB (2**20 bytes), utilisation in percent (0-100).

``hello`` (first line)
    ``{"type": "hello", "agent": 1, "pid": int, "python": "3.11.2", "hostname": str,
    "time": float, "gpu_backend": "pynvml" | "nvidia-smi" | "sim" | "none"}``
``gpu`` (every ``--interval`` seconds, default 1.0)
    ``{"type": "gpu", "time": float, "source": "pynvml" | "nvidia-smi" | "sim",
    "simulated": bool, "driver": str | null,
    "gpus": [{"index": int, "name": str, "uuid": str | null, "memory_total_mib": float,
    "memory_used_mib": float, "utilization_pct": float | null,
    "processes": [{"pid": int, "used_mib": float | null, "cmdline": str | null}]}]}``.
    ``cmdline`` is /proc/PID/cmdline joined with spaces (null when the pid is not visible,
    e.g. another container). ``simulated`` is true only for the ``sim`` source.
``no_gpu`` (instead of ``gpu``, at the same interval, when no backend works)
    ``{"type": "no_gpu", "time": float, "reason": "pynvml: ...; nvidia-smi: ..."}``
``log`` (lines of the followed file, as they are completed by a newline)
    ``{"type": "log", "path": str, "offset": int, "end": int, "lines": [str, ...]}``:
    consecutive lines (without their newline) that span bytes ``[offset, end)`` of the file.
    Each line is decoded as UTF-8 with ``surrogateescape``: ``line.encode("utf-8",
    "surrogateescape")`` gives back the exact bytes (invalid UTF-8 included); display it with
    ``errors="replace"``. A line longer than ``--max-line`` bytes (default 1 MiB) comes alone in
    a record with ``"truncated": true`` and ``"length": int`` (its full length in bytes); only
    its first ``--max-line`` bytes are sent.
    Every ``log`` record also has ``"size": int``: the file's size in bytes when the agent last
    looked (at least ``end``); ``size - end`` is how far the reader is behind the node.
``log_open`` (each time the file is opened, before its first ``log`` record)
    ``{"type": "log_open", "path": str, "size": int, "lines_end": int, "offset": int, "time": float,
    "utc_offset": int}``: its size then, the end of its last whole line then (``size`` less a
    last line without its newline yet: a progress bar, a line half written; that line comes
    once it is ended), the offset reading starts at, the node's clock and its
    local time's offset from UTC in seconds (``time.localtime().tm_gmtoff``): a log's envelope
    time (the node's local time, no zone) + ``-utc_offset`` is unix seconds.
``log_skip`` (with ``--tail-bytes``, when the file was opened from offset 0)
    ``{"type": "log_skip", "path": str, "offset": int, "end": int}``: bytes ``[offset, end)``
    are not sent. A file opened from offset 0 is read from its head up to the end of the first
    line holding ``--head-until`` (at most ``--head-bytes``, default 8 MiB; without that text in
    them, the whole lines of those bytes), then from the first line start in its last
    ``--tail-bytes``; the middle, when there is one, is skipped. A reader fetches a skipped range later
    with any byte-range read (e.g. ``tail -c +N | head -c M``).
``log_reset``
    ``{"type": "log_reset", "path": str, "reason": "truncated" | "rotated", "offset": 0}``:
    the file was truncated or replaced (rename/rotation); also when it is opened shorter than
    the offset asked for (truncated while not followed; then with ``was``, that offset, and
    ``size``, bytes); lines restart at offset 0 of the
    current file. The old file's remaining lines are sent before this record.
``log_wait``
    ``{"type": "log_wait", "path": str}``: the file does not exist (yet); it is opened as soon
    as it appears.
``run`` (with ``--run``; at start and whenever the run's status.json or liveness changes)
    ``{"type": "run", "run_id": str, "alive": bool, "status": {...status.json...}}``
``heartbeat`` (when nothing else was sent for ``HEARTBEAT_S`` = 5 seconds)
    ``{"type": "heartbeat", "time": float}``: lets both ends notice a dead stream. Ignore it.
``error``
    ``{"type": "error", "message": str}`` (a bad argument or an unreadable file; the agent goes
    on where it can).

The agent exits when its stdout is closed (the console went away: seen at the next record or
heartbeat) or when its parent process ends (the ssh session or the console is gone); consumers
must ignore record types they do not know.

The simulated GPU file (``--sim-file``, else ``$MAMBACONSOLE_SIM_GPU_FILE``, the variable the
simulator writes it under; ``$MAMBACONSOLE_SIM_GPU`` is a deprecated alias), written by
``mambaconsole.sim`` (``mambaconsole/sim/gpu.py``) and re-read at each interval; processes are
listed under the GPU that holds them::

    {"gpus": [{"index": 0, "name": str, "memory_total_mib": float, "memory_used_mib": float,
               "utilization_pct": float,
               "processes": [{"pid": int, "used_mib": float, "cmdline": str}]}],
     "simulated": true}

With ``--once`` the agent prints ``hello`` and one GPU record (``gpu``, ``no_gpu``, or ``error``
when the sample failed) and exits (no log follow).
"""

import argparse
import json
import os
import select
import socket
import subprocess
import sys
import threading
import time

AGENT_VERSION = 1
#: the simulated GPU file's variable (mambaconsole.sim.gpu.ENV_GPU_FILE); the old name is a
#: deprecated alias
SIM_GPU_ENV = "MAMBACONSOLE_SIM_GPU_FILE"
SIM_GPU_ENV_OLD = "MAMBACONSOLE_SIM_GPU"
MAX_BATCH_BYTES = 256 * 1024
HEARTBEAT_S = 5.0

_out_lock = threading.Lock()
_out = sys.stdout.buffer if hasattr(sys.stdout, "buffer") else sys.stdout
_last_emit = [time.time()]


def emit(rec):
    data = (json.dumps(rec, separators=(",", ":")) + "\n").encode("ascii")
    with _out_lock:
        try:
            _out.write(data)
            _out.flush()
        except (OSError, ValueError):
            os._exit(0)  # the console went away
        _last_emit[0] = time.time()


# -- GPU backends -------------------------------------------------------------------------

def _cmdline_text(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            parts = f.read().split(b"\0")[:-1]
    except OSError:
        return None
    return " ".join(p.decode("utf-8", "replace") for p in parts) or None


def _mib(nbytes):
    return None if nbytes is None else round(nbytes / 1048576.0, 1)


class PynvmlBackend(object):
    name = "pynvml"

    def __init__(self):
        import pynvml  # noqa: F401 - nvidia-ml-py

        self.nv = pynvml
        pynvml.nvmlInit()
        try:
            drv = pynvml.nvmlSystemGetDriverVersion()
            self.driver = drv.decode() if isinstance(drv, bytes) else drv
        except Exception:  # noqa: BLE001
            self.driver = None

    def sample(self):
        nv = self.nv
        gpus = []
        for i in range(nv.nvmlDeviceGetCount()):
            h = nv.nvmlDeviceGetHandleByIndex(i)
            name = nv.nvmlDeviceGetName(h)
            name = name.decode() if isinstance(name, bytes) else name
            try:
                uuid = nv.nvmlDeviceGetUUID(h)
                uuid = uuid.decode() if isinstance(uuid, bytes) else uuid
            except Exception:  # noqa: BLE001
                uuid = None
            mem = nv.nvmlDeviceGetMemoryInfo(h)
            try:
                util = float(nv.nvmlDeviceGetUtilizationRates(h).gpu)
            except Exception:  # noqa: BLE001
                util = None
            procs = {}
            for getter in ("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetGraphicsRunningProcesses"):
                try:
                    for p in getattr(nv, getter)(h):
                        used = getattr(p, "usedGpuMemory", None)
                        procs[p.pid] = {"pid": p.pid, "used_mib": _mib(used) if isinstance(used, int) else None,
                                        "cmdline": _cmdline_text(p.pid)}
                except Exception:  # noqa: BLE001
                    pass
            gpus.append({"index": i, "name": name, "uuid": uuid, "memory_total_mib": _mib(mem.total),
                         "memory_used_mib": _mib(mem.used), "utilization_pct": util,
                         "processes": sorted(procs.values(), key=lambda p: p["pid"])})
        return {"type": "gpu", "source": self.name, "simulated": False, "driver": self.driver, "gpus": gpus}


def _num(text):
    text = text.strip()
    try:
        return float(text)
    except ValueError:
        return None  # "[N/A]", "[Not Supported]"


class NvidiaSmiBackend(object):
    name = "nvidia-smi"
    QUERY = ["nvidia-smi", "--query-gpu=index,name,memory.used,memory.total,utilization.gpu,uuid",
             "--format=csv,noheader,nounits"]
    APPS = ["nvidia-smi", "--query-compute-apps=gpu_uuid,pid,used_memory", "--format=csv,noheader,nounits"]

    def __init__(self):
        self.driver = None
        self.sample()  # raises when nvidia-smi is missing or fails

    def _run(self, argv):
        p = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=20)
        if p.returncode != 0:
            raise RuntimeError((p.stderr or p.stdout).decode("utf-8", "replace").strip().splitlines()[-1:]
                               or "exit %d" % p.returncode)
        return p.stdout.decode("utf-8", "replace")

    def sample(self):
        gpus, by_uuid = [], {}
        for line in self._run(self.QUERY).splitlines():
            f = [x.strip() for x in line.split(",")]
            if len(f) < 5:
                continue
            g = {"index": int(f[0]), "name": f[1], "uuid": f[5] if len(f) > 5 else None,
                 "memory_used_mib": _num(f[2]), "memory_total_mib": _num(f[3]), "utilization_pct": _num(f[4]),
                 "processes": []}
            gpus.append(g)
            if g["uuid"]:
                by_uuid[g["uuid"]] = g
        try:
            for line in self._run(self.APPS).splitlines():
                f = [x.strip() for x in line.split(",")]
                if len(f) >= 3 and f[0] in by_uuid and f[1].isdigit():
                    pid = int(f[1])
                    by_uuid[f[0]]["processes"].append({"pid": pid, "used_mib": _num(f[2]),
                                                       "cmdline": _cmdline_text(pid)})
        except (RuntimeError, OSError, subprocess.SubprocessError):
            pass
        return {"type": "gpu", "source": self.name, "simulated": False, "driver": self.driver, "gpus": gpus}


class SimBackend(object):
    name = "sim"

    def __init__(self, path):
        self.path = path
        self.driver = None

    def sample(self):
        with open(self.path) as f:
            data = json.load(f)
        gpus = []
        for g in data.get("gpus", []):
            procs = []
            for p in g.get("processes", []) or []:
                cmd = p.get("cmdline")
                if isinstance(cmd, list):
                    cmd = " ".join(str(c) for c in cmd)
                procs.append({"pid": p.get("pid"), "used_mib": p.get("used_mib"), "cmdline": cmd})
            gpus.append({"index": g.get("index", len(gpus)), "name": g.get("name"), "uuid": g.get("uuid"),
                         "memory_total_mib": g.get("memory_total_mib"), "memory_used_mib": g.get("memory_used_mib"),
                         "utilization_pct": g.get("utilization_pct"), "processes": procs})
        return {"type": "gpu", "source": self.name, "simulated": True, "driver": None, "gpus": gpus}


class NoGpu(object):
    name = "none"

    def __init__(self, reason):
        self.reason = reason

    def sample(self):
        return {"type": "no_gpu", "reason": self.reason}


def pick_backend(choice, sim_file):
    reasons = []
    if choice in ("auto", "sim") and sim_file:
        return SimBackend(sim_file)
    if choice == "sim":
        return NoGpu("sim: no --sim-file and no $%s" % SIM_GPU_ENV)
    if choice == "none":
        return NoGpu("GPU sampling turned off (--gpu none)")
    if choice in ("auto", "pynvml"):
        try:
            return PynvmlBackend()
        except ImportError:
            reasons.append("pynvml: not importable by %s (pip install nvidia-ml-py)" % sys.executable)
        except Exception as exc:  # noqa: BLE001 - NVMLError_LibraryNotFound, DriverNotLoaded, ...
            reasons.append("pynvml: %s" % (str(exc) or type(exc).__name__))
    if choice in ("auto", "nvidia-smi"):
        try:
            return NvidiaSmiBackend()
        except FileNotFoundError:
            reasons.append("nvidia-smi: not found on PATH")
        except Exception as exc:  # noqa: BLE001
            reasons.append("nvidia-smi: %s" % (str(exc) or type(exc).__name__))
    return NoGpu("; ".join(reasons) or "no GPU backend")


def sample_record(backend):
    """One ``gpu`` / ``no_gpu`` record, or an ``error`` record when the sample failed."""
    t = time.time()
    try:
        rec = backend.sample()
    except Exception as exc:  # noqa: BLE001 - a failed sample is reported, sampling goes on
        rec = {"type": "error", "message": "%s sample failed: %s" % (backend.name, exc)}
    rec["time"] = t
    return rec


def gpu_loop(backend, interval, stop):
    while not stop.is_set():
        t = time.time()
        emit(sample_record(backend))
        stop.wait(max(0.0, interval - (time.time() - t)))


# -- log follow ---------------------------------------------------------------------------

class Inotify(object):
    """Wakes the follower when something changes in a folder (ctypes inotify; else None)."""

    def __init__(self, folder):
        import ctypes
        import ctypes.util

        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        self.fd = libc.inotify_init1(os.O_NONBLOCK | 0o2000000)  # IN_CLOEXEC
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        mask = 0x2 | 0x4 | 0x8 | 0x40 | 0x80 | 0x100 | 0x200 | 0x400 | 0x800
        # IN_MODIFY|IN_ATTRIB|IN_CLOSE_WRITE|IN_MOVED_FROM|IN_MOVED_TO|IN_CREATE|IN_DELETE|DELETE_SELF|MOVE_SELF
        if libc.inotify_add_watch(self.fd, folder.encode(), mask) < 0:
            os.close(self.fd)
            raise OSError(ctypes.get_errno(), "inotify_add_watch")

    def wait(self, timeout):
        r, _, _ = select.select([self.fd], [], [], timeout)
        if r:
            try:
                while os.read(self.fd, 65536):
                    pass
            except (BlockingIOError, OSError):
                pass


#: bytes before a file's end searched for its last newline (``log_open``'s ``lines_end``)
LINES_END_SEARCH = 8 << 20


def _lines_end(f, size):
    """The end of the last whole line (just past its newline) of the file ``f`` of ``size``
    bytes: the lines a reader of it gets now end there; a last line not ended yet (a progress
    bar redrawn with ``\\r``, a line half written) comes once its newline does. 0 when the
    file has no newline; ``size`` when none is in its last :data:`LINES_END_SEARCH` bytes."""
    end, block = size, 1 << 16
    while end > 0 and size - end < LINES_END_SEARCH:
        start = max(0, end - block)
        f.seek(start)
        nl = f.read(end - start).rfind(b"\n")
        if nl >= 0:
            return start + nl + 1
        end = start
    return 0 if end == 0 else size


class Follower(object):
    """Follows one file by byte offset across truncation and rotation."""

    def __init__(self, path, offset, max_line, tail_bytes=0, head_bytes=8 << 20, head_until=None):
        self.path = path
        self.max_line = max_line
        self.tail_bytes = tail_bytes
        self.head_bytes = head_bytes
        self.head_until = head_until.encode("utf-8") if head_until else None
        self.size = 0  # the file's size when last looked at
        self.f = None
        self.ino = None
        self.offset = 0  # file offset of the first byte of `pending`
        self.pending = b""  # an incomplete line (no newline yet), at most max_line bytes
        self.skip = None  # [offset, length so far, head bytes] of an over-long line being dropped
        self.start_offset = offset
        self.waiting = False

    def _open(self):
        try:
            f = open(self.path, "rb")
        except OSError:
            if not self.waiting:
                emit({"type": "log_wait", "path": self.path})
                self.waiting = True
            return False
        self.waiting = False
        st = os.fstat(f.fileno())
        self.f, self.ino = f, (st.st_dev, st.st_ino)
        off, self.start_offset = self.start_offset, 0
        if off < 0:  # the last -off bytes, starting at a line start
            off = max(0, st.st_size + off)
            if off > 0:
                f.seek(off - 1)
                nl = f.read(1 << 20).find(b"\n")
                off = off + nl if nl >= 0 else st.st_size
        if off > st.st_size:
            # shorter than where the console had read to: truncated while nobody followed it
            # (the link was down); its offsets start over: say so and read it from its start
            emit({"type": "log_reset", "path": self.path, "reason": "truncated", "offset": 0,
                  "was": off, "size": st.st_size})
            off = 0
        self.size = st.st_size
        emit({"type": "log_open", "path": self.path, "size": st.st_size, "lines_end": _lines_end(f, st.st_size),
              "offset": off, "time": time.time(), "utc_offset": time.localtime().tm_gmtoff})
        self.offset, self.pending, self.skip = off, b"", None
        if off == 0 and self.tail_bytes > 0 and st.st_size > self.tail_bytes:
            off = self._head_and_tail(f, st.st_size)
        f.seek(off)
        self.offset = off
        return True

    def _head_and_tail(self, f, size):
        """Send the head (up to the end of the first ``head_until`` line, at most ``head_bytes``),
        say what is skipped (``log_skip``); return the offset of the tail's first line."""
        f.seek(0)
        data = f.read(self.head_bytes)
        cut = -1
        if self.head_until:
            at = data.find(self.head_until)
            if at >= 0:
                cut = data.find(b"\n", at)
        if cut < 0:
            cut = data.rfind(b"\n")
        head_end = cut + 1
        if head_end:
            self.feed(data[:head_end])
        data = None
        start = size - self.tail_bytes
        f.seek(start - 1)
        nl = f.read(1 << 20).find(b"\n")
        start = start + nl if nl >= 0 else size
        if start > head_end:
            emit({"type": "log_skip", "path": self.path, "offset": head_end, "end": start})
        return max(start, head_end)

    def _truncated(self, off, end, line_bytes, length):
        emit({"type": "log", "path": self.path, "offset": off, "end": end,
              "lines": [line_bytes[:self.max_line].decode("utf-8", "surrogateescape")],
              "truncated": True, "length": length, "size": max(self.size, end)})

    def _emit_block(self, block, base):
        """block: whole lines (the last may lack its newline only at a final flush)."""
        pos, n = 0, len(block)
        while pos < n:
            cut = min(n, pos + MAX_BATCH_BYTES)
            if cut < n:
                nl = block.rfind(b"\n", pos, cut)
                if nl < 0:
                    nl = block.find(b"\n", cut)
                cut = n if nl < 0 else nl + 1
            piece = block[pos:cut]
            if len(piece) > self.max_line:
                self._emit_slow(piece, base + pos)
            else:
                lines = piece.decode("utf-8", "surrogateescape").split("\n")
                if piece.endswith(b"\n"):
                    lines.pop()
                emit({"type": "log", "path": self.path, "offset": base + pos, "end": base + cut, "lines": lines,
                      "size": max(self.size, base + cut)})
            pos = cut

    def _emit_slow(self, piece, base):
        """A piece holding a line over max_line bytes: such lines go alone, truncated."""
        pos, run_start, lines = 0, 0, []
        while pos < len(piece):
            nl = piece.find(b"\n", pos)
            end = len(piece) if nl < 0 else nl + 1
            line = piece[pos:end - 1] if nl >= 0 else piece[pos:end]
            if len(line) > self.max_line:
                if lines:
                    emit({"type": "log", "path": self.path, "offset": base + run_start, "end": base + pos,
                          "lines": lines, "size": max(self.size, base + pos)})
                    lines = []
                self._truncated(base + pos, base + end, line, len(line))
            else:
                if not lines:
                    run_start = pos
                lines.append(line.decode("utf-8", "surrogateescape"))
            pos = end
        if lines:
            emit({"type": "log", "path": self.path, "offset": base + run_start, "end": base + len(piece),
                  "lines": lines, "size": max(self.size, base + len(piece))})

    def feed(self, data, final=False):
        """data: the next bytes of the file. final: the file ends here (flush a last partial line)."""
        if self.skip is not None:
            nl = data.find(b"\n")
            if nl < 0:
                self.skip[1] += len(data)
                if final:
                    off, length, head = self.skip
                    self._truncated(off, off + length, head, length)
                    self.skip, self.offset = None, off + length
                return
            off, length, head = self.skip
            length += nl
            self._truncated(off, off + length + 1, head, length)
            self.skip, self.offset = None, off + length + 1
            data = data[nl + 1:]
        buf = self.pending + data if self.pending else data
        base = self.offset
        last = len(buf) - 1 if final else buf.rfind(b"\n")
        if last >= 0:
            self._emit_block(buf[:last + 1], base)
        rest = buf[last + 1:]
        self.offset = base + last + 1
        if len(rest) > self.max_line:  # an over-long line still growing: keep only its head
            self.skip = [self.offset, len(rest), rest[:self.max_line]]
            self.pending = b""
        else:
            self.pending = rest

    def _drain(self, final=False):
        while True:
            data = self.f.read(1 << 20)
            if not data:
                break
            self.feed(data)
        if final and (self.pending or self.skip is not None):
            self.feed(b"", final=True)

    def poll(self):
        if self.f is None and not self._open():
            return
        try:
            st = os.stat(self.path)
            ident = (st.st_dev, st.st_ino)
        except OSError:
            ident = None  # removed: finish what the open file still has, wait for a new one
        if ident is not None and ident != self.ino:
            self._drain(final=True)  # rotated: finish the old file, then the new one from 0
            self.f.close()
            self.f = None
            emit({"type": "log_reset", "path": self.path, "reason": "rotated", "offset": 0})
            if not self._open():
                return
        elif os.fstat(self.f.fileno()).st_size < self.f.tell():
            if self.pending or self.skip is not None:
                self.feed(b"", final=True)
            self.size = 0
            self.f.seek(0)
            self.offset, self.pending, self.skip = 0, b"", None
            emit({"type": "log_reset", "path": self.path, "reason": "truncated", "offset": 0})
        self.size = max(self.size, os.fstat(self.f.fileno()).st_size)
        self._drain()


def _stat_ticks(pid):
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            data = f.read()
        fields = data[data.rindex(b")") + 2:].split()
        return fields[0], int(fields[19])
    except (OSError, ValueError, IndexError):
        return None


class RunWatch(object):
    def __init__(self, run_dir, run_id):
        self.path = os.path.join(run_dir, "status.json")
        self.run_id = run_id
        self.last = None

    def status(self):
        try:
            with open(self.path) as f:
                return json.load(f)
        except (OSError, ValueError):
            return None

    def poll(self):
        st = self.status()
        if st is None:
            return
        pid = st.get("pid")
        alive = False
        if pid:
            s = _stat_ticks(pid)
            alive = s is not None and s[0] != b"Z" and (st.get("pid_start_ticks") in (None, s[1]))
        key = (json.dumps(st, sort_keys=True), alive)
        if key != self.last:
            self.last = key
            emit({"type": "run", "run_id": self.run_id, "alive": alive, "status": st})


def main(argv=None):
    ap = argparse.ArgumentParser(prog="node_agent")
    ap.add_argument("--interval", type=float, default=1.0)
    ap.add_argument("--gpu", default="auto", choices=["auto", "pynvml", "nvidia-smi", "sim", "none"])
    ap.add_argument("--sim-file", default=os.environ.get(SIM_GPU_ENV) or os.environ.get(SIM_GPU_ENV_OLD) or None)
    ap.add_argument("--follow")
    ap.add_argument("--run")
    ap.add_argument("--home")
    ap.add_argument("--offset", type=int, default=0)
    ap.add_argument("--max-line", type=int, default=1 << 20)
    ap.add_argument("--tail-bytes", type=int, default=0)
    ap.add_argument("--head-bytes", type=int, default=8 << 20)
    ap.add_argument("--head-until")
    ap.add_argument("--once", action="store_true")
    args = ap.parse_args(argv)

    backend = pick_backend(args.gpu, args.sim_file)
    emit({"type": "hello", "agent": AGENT_VERSION, "pid": os.getpid(), "python": "%d.%d.%d" % sys.version_info[:3],
          "executable": sys.executable, "hostname": socket.gethostname(), "time": time.time(),
          "gpu_backend": backend.name})
    if args.once:
        emit(sample_record(backend))
        return 0

    stop = threading.Event()
    if args.interval > 0:
        threading.Thread(target=gpu_loop, args=(backend, args.interval, stop), daemon=True).start()

    follow_path = args.follow
    watch = None
    if args.run:
        home = os.path.abspath(os.path.expanduser(args.home or os.environ.get("MAMBACONSOLE_HOME") or "~/.mambaconsole"))
        run_dir = os.path.join(home, "runs", args.run)
        watch = RunWatch(run_dir, args.run)
        st = watch.status()
        if st is None:
            emit({"type": "error", "message": "no run %s in %s" % (args.run, os.path.join(home, "runs"))})
        else:
            follow_path = follow_path or st.get("log_path") or os.path.join(run_dir, "log")
    follower = (Follower(os.path.abspath(follow_path), args.offset, args.max_line, tail_bytes=args.tail_bytes,
                         head_bytes=args.head_bytes, head_until=args.head_until) if follow_path else None)
    notify = None
    if follower is not None:
        try:
            notify = Inotify(os.path.dirname(follower.path))
        except (OSError, AttributeError, ImportError):
            notify = None
    last_watch = 0.0
    parent = os.getppid()
    try:
        while True:
            if os.getppid() != parent:
                return 0  # orphaned: the ssh session or the console is gone
            if follower is not None:
                follower.poll()
            now = time.time()
            if now - _last_emit[0] >= HEARTBEAT_S:
                emit({"type": "heartbeat", "time": now})
            if watch is not None and now - last_watch >= 0.5:
                watch.poll()
                last_watch = now
            if notify is not None:
                notify.wait(0.5)
            else:
                time.sleep(0.05 if follower is not None else 0.5)
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    sys.exit(main())
