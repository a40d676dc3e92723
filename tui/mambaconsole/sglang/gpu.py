"""GPU tables → per-GPU memory, utilisation and processes.

Formats:
- nvidia-smi CSV, as our agent queries it (:data:`AGENT_QUERY`,
  ``--format=csv,noheader,nounits``), also with a header line and units (``66601 MiB``);
- the human ``nvidia-smi`` table, both header styles (drivers before R530: ``| GPU  Name
  Persistence-M| Bus-Id ...``; R530+: wider ``| GPU  Name   Persistence-M | ...``), with its
  ``Processes:`` table (with or without the GI/CI columns);
- ``gpustat`` output: ``[0] NAME | 33°C,   0 % | 66601 / 81251 MB | user(2620M) ...``
  (gpustat labels MiB as "MB"; the numbers are MiB).

Memory is in MiB as the tool printed it; utilisation in percent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mambaconsole.errors import ConsoleError

__all__ = [
    "Gpu", "GpuProcess", "AGENT_QUERY", "parse_nvidia_smi_csv", "parse_nvidia_smi_table",
    "parse_gpustat", "parse_gpu_table", "looks_like_gpu_table", "ProcessPanel", "process_panels",
]

#: the ``--query-gpu`` fields our agent asks for, in order
AGENT_QUERY = "index,name,memory.used,memory.total,utilization.gpu"


@dataclass(frozen=True)
class GpuProcess:
    """A process holding memory on a GPU. ``pid``/``name``/``user`` None when the tool does
    not show them (gpustat without ``-p``; containers: host PIDs)."""

    memory_mib: float
    pid: int | None = None
    name: str | None = None
    user: str | None = None


@dataclass(frozen=True)
class Gpu:
    index: int
    name: str | None
    memory_used_mib: float
    memory_total_mib: float
    utilization_pct: float | None = None
    temperature_c: float | None = None
    processes: tuple[GpuProcess, ...] = ()

    @property
    def used_fraction(self) -> float | None:
        return self.memory_used_mib / self.memory_total_mib if self.memory_total_mib else None

    def as_json(self) -> dict:
        return {"index": self.index, "name": self.name, "memory_used_mib": self.memory_used_mib,
                "memory_total_mib": self.memory_total_mib, "utilization_pct": self.utilization_pct}


def _n(text: str | None) -> float | None:
    if text is None:
        return None
    m = re.search(r"-?\d+(?:\.\d+)?", text)
    if not m or "N/A" in text:
        return None
    v = float(m.group(0))
    return int(v) if v.is_integer() else v


def parse_nvidia_smi_csv(text: str, fields: str = AGENT_QUERY) -> list[Gpu]:
    """``nvidia-smi --query-gpu=FIELDS --format=csv[,noheader][,nounits]`` output. A header
    line, if present, gives the field order. Raises ConsoleError when a row does not fit."""
    names = [f.strip() for f in fields.split(",")]
    gpus: list[Gpu] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        cells = [c.strip() for c in line.split(",")]
        if cells[0].lower().startswith("index"):
            names = [re.sub(r"\s*\[.*\]$", "", c) for c in cells]
            continue
        if len(cells) < len(names):
            raise ConsoleError(f"nvidia-smi CSV row has {len(cells)} fields, expected {len(names)}: {line.strip()!r}")
        row = dict(zip(names, cells))
        idx = _n(row.get("index"))
        used, total = _n(row.get("memory.used")), _n(row.get("memory.total"))
        if idx is None or used is None or total is None:
            raise ConsoleError(f"nvidia-smi CSV row without index/memory: {line.strip()!r}")
        gpus.append(Gpu(index=int(idx), name=row.get("name"), memory_used_mib=used,
                        memory_total_mib=total, utilization_pct=_n(row.get("utilization.gpu")),
                        temperature_c=_n(row.get("temperature.gpu"))))
    return gpus


_SMI_GPU = re.compile(r"^\|\s*(\d+)\s+(.+?)\s+(On|Off)\s*\|")
_SMI_MEM = re.compile(r"(\d+)\s*MiB\s*/\s*(\d+)\s*MiB")
_SMI_UTIL = re.compile(r"\|\s*(\d+)%\s+\S")
_SMI_TEMP = re.compile(r"^\|\s*\S+\s+(\d+)C\b")
_SMI_PROC = re.compile(
    r"^\|\s*(\d+)\s+(?:(?:\S+)\s+(?:\S+)\s+)?(\d+)\s+([CGM+]+)\s+(.*?)\s+(\d+|N/A)\s*(?:MiB)?\s*\|\s*$")


_TABLE_START = re.compile(r"[|+](?:[-=]{3}|\s)")


def _table_lines(text: str) -> list[str]:
    """The lines of ``text`` from their table border on: an nvidia-smi table inside another
    tool's log lines (``2026-01-02 10:00:00 INFO | GPU ...``, ``node-1 | ...``) keeps only its
    table part; lines without a border are kept as they are."""
    out = []
    for line in text.splitlines():
        if line[:1] not in ("|", "+"):
            m = _TABLE_START.search(line)
            if m is not None and line.rstrip().endswith(("|", "+")):
                line = line[m.start():]
        out.append(line)
    return out


def parse_nvidia_smi_table(text: str) -> list[Gpu]:
    """The human ``nvidia-smi`` table (both header styles), processes included; the table may
    sit inside another tool's log lines (:func:`_table_lines`)."""
    lines = _table_lines(text)
    found: list[dict] = []
    in_procs = False
    procs: dict[int, list[GpuProcess]] = {}
    i = 0
    while i < len(lines):
        line = lines[i].rstrip()
        if "Processes:" in line:
            in_procs = True
        elif not in_procs:
            m = _SMI_GPU.match(line)
            if m and i + 1 < len(lines):
                nxt = lines[i + 1]
                mm = _SMI_MEM.search(nxt)
                if mm:
                    um = _SMI_UTIL.search(nxt[nxt.find("MiB"):] if "MiB" in nxt else nxt)
                    tm = _SMI_TEMP.match(nxt)
                    found.append({"index": int(m.group(1)), "name": m.group(2).strip(),
                                  "used": float(mm.group(1)), "total": float(mm.group(2)),
                                  "util": float(um.group(1)) if um else None,
                                  "temp": float(tm.group(1)) if tm else None})
                    i += 2
                    continue
        else:
            pm = _SMI_PROC.match(line)
            if pm:
                mem = pm.group(5)
                procs.setdefault(int(pm.group(1)), []).append(GpuProcess(
                    memory_mib=float(mem) if mem.isdigit() else 0.0, pid=int(pm.group(2)),
                    name=pm.group(4).strip() or None))
        i += 1
    return [Gpu(index=g["index"], name=g["name"], memory_used_mib=g["used"], memory_total_mib=g["total"],
                utilization_pct=g["util"], temperature_c=g["temp"], processes=tuple(procs.get(g["index"], ())))
            for g in found]


_GPUSTAT = re.compile(
    r"^\[(\d+)\]\s+(.+?)\s*\|\s*(-?\d+)\s*°?\s*C?\s*,?\s*(?:(?:\d+|N/A)\s*%\s*,\s*)?(\d+|N/A)\s*%[^|]*\|"
    r"\s*(\d+)\s*/\s*(\d+)\s*MB\s*\|?(.*)$")
_GPUSTAT_PROC = re.compile(r"([^\s()]+?)(?::([^\s/()]+)/(\d+))?\((\d+)M\)")


def parse_gpustat(text: str) -> list[Gpu]:
    """``gpustat`` output (header line optional; ``-c``/``-p``/``-u`` process forms)."""
    gpus: list[Gpu] = []
    for line in text.splitlines():
        m = _GPUSTAT.match(line.strip().replace("\u00a0", " "))
        if not m:
            continue
        procs = tuple(
            GpuProcess(memory_mib=float(p.group(4)), pid=int(p.group(3)) if p.group(3) else None,
                       name=p.group(2), user=p.group(1))
            for p in _GPUSTAT_PROC.finditer(m.group(7) or ""))
        util = m.group(4)
        gpus.append(Gpu(index=int(m.group(1)), name=m.group(2).strip(), memory_used_mib=float(m.group(5)),
                        memory_total_mib=float(m.group(6)),
                        utilization_pct=float(util) if util.isdigit() else None,
                        temperature_c=float(m.group(3)), processes=procs))
    return gpus


#: the header of nvidia-smi's process panel (all drivers: ``| Processes: ... GPU Memory |``
#: then ``|  GPU   GI   CI   PID   Type   Process name   GPU Memory |`` or without GI/CI)
_SMI_PROC_HEAD = re.compile(r"\|\s*Processes:\s.*\|\s*$", re.M)
_SMI_PROC_COLS = re.compile(r"\|\s*GPU\s+.*\bPID\s+Type\s+Process name\b", re.M)


def looks_like_gpu_table(text: str) -> str | None:
    """``"gpustat"``, ``"nvidia-smi"`` or ``"csv"`` when the text is one, else None. An
    nvidia-smi table with only its process panel (a container, a cut paste) is one."""
    if "NVIDIA-SMI" in text or re.search(r"\|\s*\d+MiB\s*/\s*\d+MiB", text) or (
            _SMI_PROC_HEAD.search(text) and _SMI_PROC_COLS.search(text)):
        return "nvidia-smi"
    if re.search(r"^\[\d+\]\s.+\|.+\|\s*\d+\s*/\s*\d+\s*MB", text, re.M):
        return "gpustat"
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if lines and all(re.match(r"^\s*(index\b.*|\d+\s*,\s*[^,]+,\s*[\d.]+(\s*MiB)?\s*,\s*[\d.]+.*)$", ln) for ln in lines[:8]):
        return "csv"
    return None


@dataclass(frozen=True)
class ProcessPanel:
    """One nvidia-smi ``Processes:`` panel: its rows as ``(gpu index, process)``, and
    whether it said ``No running processes found``. An empty panel without that sentence
    is what nvidia-smi prints inside a container whose PID namespace hides the host's
    processes (the GPU's memory is still in use)."""

    rows: tuple[tuple[int, GpuProcess], ...]
    none_found: bool


def process_panels(text: str) -> list[ProcessPanel]:
    """Every ``Processes:`` panel of nvidia-smi tables in ``text``, in order (several
    tables may be pasted together)."""
    panels: list[ProcessPanel] = []
    rows: list[tuple[int, GpuProcess]] | None = None
    none_found = False
    ruled = False
    for line in _table_lines(text):
        line = line.rstrip()
        if _SMI_PROC_HEAD.match(line.strip()):
            if rows is not None:
                panels.append(ProcessPanel(tuple(rows), none_found))
            rows, none_found, ruled = [], False, False
            continue
        if rows is None:
            continue
        s = line.strip()
        if s.startswith("|=") or s.startswith("|-"):
            ruled = True
            continue
        if "No running processes found" in s:
            none_found = True
            continue
        pm = _SMI_PROC.match(s)
        if pm:
            mem = pm.group(5)
            rows.append((int(pm.group(1)), GpuProcess(memory_mib=float(mem) if mem.isdigit() else 0.0,
                                                      pid=int(pm.group(2)), name=pm.group(4).strip() or None)))
            continue
        if s.startswith("+-") and ruled or not s.startswith(("|", "+")):
            panels.append(ProcessPanel(tuple(rows), none_found))
            rows = None
    if rows is not None:
        panels.append(ProcessPanel(tuple(rows), none_found))
    return panels


def parse_gpu_table(text: str) -> list[Gpu]:
    """Detect the format and parse it. Raises ConsoleError when it is none of them."""
    kind = looks_like_gpu_table(text)
    if kind == "nvidia-smi":
        return parse_nvidia_smi_table(text)
    if kind == "gpustat":
        return parse_gpustat(text)
    if kind == "csv":
        return parse_nvidia_smi_csv(text)
    raise ConsoleError("not a GPU table (nvidia-smi, nvidia-smi CSV or gpustat)")
