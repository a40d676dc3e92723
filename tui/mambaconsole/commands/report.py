"""``mambaconsole report HOST [--run ID] [--no-redact] [--python P] [-o FILE]``: a Markdown
summary of one run that a person pastes into an issue.

It holds: the node (host, its Python), the GPUs (the node agent's sample), the SGLang version
(the node python's ``sglang`` distribution, else the version the log names), the run (state,
exit code, times), its launch command and the argv diff from the previous run, the values
SGLang used that differ from the given ones (the log's ``server_args=`` dump, SGLang's own
"changed setting" lines), the memory budget (GiB, one rank: SGLang's "GB" numbers as printed, which are bytes / 1024³), the outcome
with the error lines, and the speculative acceptance summary. Every log fact comes from
:mod:`mambaconsole.sglang` (``events.parse_text`` and ``summary.summarize``); none is parsed
here.

Secrets are always replaced by ``<secret>`` (:func:`mambaconsole.redact.redact_secrets`: API
keys and tokens given as options or ``name=value``, URL passwords and ``?token=``, Bearer
tokens, ``hf_``/``sk-``/AWS key shapes), and the report's last line says how many. No
control character reaches the output: the argv is written as one line of bash (``$'...'`` for
an element with an escape), anything else from the node has its escapes shown as ``\\x1b``.

Personal details are replaced by placeholders unless ``--no-redact``: home folders
(``<home>``: the node's and this machine's ``$HOME``, and any ``/home/NAME``,
``/Users/NAME``), user names (``<user>``: this machine's and the SSH login's, the run's
``launched_by`` user, and every NAME of such a home folder), host names (``<host>``: the HOST
given, the ssh HostName, the node's and this machine's host names, the ``launched_by`` host).

Errors: one line (:class:`~mambaconsole.errors.ConsoleError`): node unreachable, no runs, no
such run.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import re
import shlex
import socket
import sys
import time
from collections.abc import Iterable

from mambaconsole.commands._common import add_host, run_async
from mambaconsole.errors import ConsoleError
from mambaconsole.redact import PLACEHOLDER, argv_secrets, find_secrets, redact_secrets
from mambaconsole.units import SGLANG_GB

HELP = "a Markdown report of a run to paste into an issue (personal details redacted)"

#: bytes of the run's log read from the node at most: the first HEAD and the last rest
LOG_CAP = 32 * 1024 * 1024
LOG_HEAD = 4 * 1024 * 1024
#: error lines shown at most (the end of the failure's traceback)
ERROR_LINES = 25

_READ_LOG = (
    "import os, sys\n"
    "p, cap, head = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])\n"
    "out = sys.stdout.buffer\n"
    "try:\n"
    "    f = open(p, 'rb')\n"
    "except OSError as e:\n"
    "    sys.exit('cannot read the log %s: %s' % (p, e.strerror))\n"
    "size = os.fstat(f.fileno()).st_size\n"
    "if size <= cap:\n"
    "    out.write(f.read())\n"
    "else:\n"
    "    out.write(f.read(head))\n"
    "    out.write(b'\\n[... %d bytes of the log left out ...]\\n' % (size - cap))\n"
    "    f.seek(size - (cap - head))\n"
    "    out.write(f.read())\n"
)

_FACTS = (
    "import json, os, socket, sys\n"
    "v = None\n"
    "try:\n"
    "    import importlib.metadata as m\n"
    "    v = m.version('sglang')\n"
    "except Exception:\n"
    "    pass\n"
    "print(json.dumps({'home': os.path.expanduser('~'), 'hostname': socket.gethostname(),\n"
    "                  'python': '%d.%d.%d' % sys.version_info[:3], 'executable': sys.executable,\n"
    "                  'sglang': v}))\n"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_host(parser)
    parser.add_argument("--run", metavar="ID", help="the run (default: the newest run)")
    parser.add_argument("--no-redact", action="store_true",
                        help="keep user names, home paths and host names as they are")
    parser.add_argument("--python", default="python3",
                        help="the node's python with SGLang (for its version; default python3)")
    parser.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE instead of stdout")


# ----------------------------------------------------------------------------- redaction


class Redactor:
    """Replaces personal details with placeholders (see the module docstring). Strings are
    matched whole (not inside longer words); longer ones first."""

    def __init__(self, *, users: Iterable[str] = (), homes: Iterable[str] = (), hosts: Iterable[str] = ()) -> None:
        self.homes = sorted({h.rstrip("/") for h in homes if h and h.rstrip("/") not in ("", "/")}, key=len, reverse=True)
        self.users = {u for u in users if u and len(u) >= 2}
        self.hosts = {h for h in hosts if h and len(h) >= 2 and h not in ("local", "localhost", "127.0.0.1", "::1")}

    def learn(self, text: str) -> None:
        """Add the NAME of every ``/home/NAME`` or ``/Users/NAME`` in ``text`` as a user name."""
        for m in re.finditer(r"(?<![\w.-])/(?:home|Users)/([A-Za-z0-9_][A-Za-z0-9_.-]*)", text):
            self.users.add(m.group(1))

    def __call__(self, text: str) -> str:
        for h in self.homes:
            text = re.sub(re.escape(h) + r"(?=/|\b|$)", "<home>", text)
        text = re.sub(r"(?<![\w.-])/(?:home|Users)/[A-Za-z0-9_][A-Za-z0-9_.-]*", "<home>", text)
        for value, label in sorted([(h, "<host>") for h in self.hosts] + [(u, "<user>") for u in self.users],
                                   key=lambda p: len(p[0]), reverse=True):
            text = re.sub(r"(?<![A-Za-z0-9_])" + re.escape(value) + r"(?![A-Za-z0-9_])", label, text)
        return text


def _identity_parts(who: str | None) -> tuple[str | None, str | None]:
    if not who or "@" not in who:
        return who, None
    u, h = who.split("@", 1)
    return u, h


# ----------------------------------------------------------------------------- markdown


def _fence(text: str, lang: str = "") -> str:
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return f"{ticks}{lang}\n{text}\n{ticks}"


def _cell(v) -> str:
    s = "(not given)" if v is None else ("true" if v is True else "false" if v is False else str(v))
    return s.replace("|", "\\|").replace("\n", " ")


def _table(head: tuple[str, ...], rows: list[tuple]) -> str:
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    out += ["| " + " | ".join(_cell(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def _utc(ts) -> str:
    if not ts:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(float(ts)))


def argv_diff(prev: list[str], cur: list[str]) -> list[tuple[str, object, object]]:
    """(flag, previous value, this run's value) for every option that differs, from
    :func:`mambaconsole.sglang.argv_diff.diff` (``True`` for a bare flag, None when absent);
    the launcher itself as ``program``."""
    from mambaconsole.sglang.argv_diff import diff

    rows: list[tuple[str, object, object]] = []
    for kind, flag, old, new in diff(prev, cur):
        if kind == "+":
            rows.append((flag, None, True if new is None else new))
        elif kind == "-":
            rows.append((flag, True if old is None else old, None))
        else:
            rows.append((flag, old, new))
    return rows


def _same(given: object, used: object) -> bool:
    if given is True:
        return used is True
    if isinstance(used, bool):
        return str(given).lower() in ("true", "1") if used else str(given).lower() in ("false", "0")
    if isinstance(used, (int, float)):
        try:
            return float(str(given)) == float(used)
        except ValueError:
            return False
    return str(given) == str(used)


def changed_by_sglang(argv: list[str], dump: dict | None) -> list[tuple[str, object, object]]:
    """(flag, given, used) for each option given in ``argv`` whose value in SGLang's
    ``server_args=`` dump differs (the value SGLang really used)."""
    if not dump:
        return []
    from mambaconsole.sglang.argv import LaunchCommand, flag_field

    rows = []
    for arg in LaunchCommand.parse(argv).args:
        if not arg.flag:
            continue
        # the field's current name, or the flag's own dest (older SGLang: mamba_scheduler_strategy)
        name = next((n for n in (flag_field(arg.flag), arg.flag.lstrip("-").replace("-", "_")) if n in dump), None)
        if name is None:
            continue
        given: object = True if arg.value is None else arg.value
        used = dump[name]
        if isinstance(used, (list, tuple, dict)) or (isinstance(used, str) and used.endswith(")")):
            continue  # nested values are not compared
        if not _same(given, used):
            rows.append((arg.flag, given, used))
    return rows


def render(*, host: str, facts: dict, gpu: dict | None, run, prev, log_text: str, redact: Redactor | None) -> str:
    """The report's Markdown (see the module docstring). ``run`` / ``prev``: runs from the node's
    run store (:class:`mambaconsole.node.runs.Run`); ``gpu``: the agent's ``gpu`` / ``no_gpu``
    record."""
    from mambaconsole.sglang import events as E
    from mambaconsole.sglang.summary import summarize
    from mambaconsole.sglang.text import display_text, shell_line, shorten

    events = E.parse_text(log_text)
    s = summarize(events)
    rec = run.record or {}
    version = facts.get("sglang") or s.version
    out: list[str] = [f"## mambaconsole report: run `{run.run_id}`", ""]
    out.append(f"- **node**: `{host}` ({facts.get('hostname') or '?'}), Python {facts.get('python') or '?'}")
    out.append(f"- **SGLang**: {version or 'not importable by ' + str(facts.get('executable') or 'the node python')}")
    if gpu and gpu.get("type") == "gpu":
        gs = ", ".join(f"GPU {g.get('index')}: {g.get('name')} {float(g.get('memory_total_mib') or 0) / 1024:.1f} GiB "
                       f"({float(g.get('memory_used_mib') or 0) / 1024:.1f} GiB used)" for g in gpu.get("gpus", []))
        out.append(f"- **GPUs** ({gpu.get('source')}{', simulated' if gpu.get('simulated') else ''}): {gs or 'none'}")
    else:
        out.append(f"- **GPUs**: none seen ({(gpu or {}).get('reason', 'not sampled')})")
    state = run.state_text
    out.append(f"- **run**: {state}; started {_utc(run.started or rec.get('created'))}, ended {_utc(run.ended)}"
               + (f"; launched by `{rec['launched_by']}`" if rec.get("launched_by") else ""))
    if rec.get("error"):
        out.append(f"- **run store says**: {rec['error']}")
    out += ["", "### Launch command", "", _fence(shell_line(run.argv) if run.argv else "(unknown)", "sh"), ""]
    if prev is not None:
        diff = argv_diff(list(prev.argv), list(run.argv))
        out.append(f"### Changes from the previous run `{prev.run_id}` ({prev.state_text})")
        out += ["", _table(("flag", "previous run", "this run"), diff) if diff else "No change: the same argv.", ""]
    else:
        out += ["### Changes from the previous run", "", "No previous run on this node.", ""]
    dump = s.last.server_args if s.boots else None
    changed = changed_by_sglang(list(run.argv), dump)
    said = [e for e in events if isinstance(e, E.SettingChanged)]
    out += ["### Values SGLang changed", ""]
    if dump is None:
        out.append("The log has no `server_args=` dump: the values SGLang used are not known from the log.")
    elif changed:
        out.append(_table(("flag", "given", "used by SGLang (server_args dump)"), changed))
    else:
        out.append("Every option given is used as given (per the log's `server_args=` dump).")
    if said:
        out += ["", "SGLang's own lines about changing settings:", ""]
        msgs = list(dict.fromkeys(shorten(display_text(e.message), 300) for e in said))  # ranks repeat them
        out += [f"- `{m}`" for m in msgs[:20]]
    out.append("")
    mem = s.memory_gb()
    rank = s.last.primary.rank if s.boots and s.last.primary else None
    items = [(k, v) for k, v in mem.items() if v is not None]
    out += [f"### Memory budget (GiB{', rank ' + rank if rank else ''}; {SGLANG_GB})", ""]
    out.append(_table(("item", "GiB"), items) if items else "The log reports no memory lines.")
    out.append("")
    out += ["### Outcome", "", f"**{s.outcome}**" + (f" (exit code {run.exit_code}"
                                                      + (f", {rec['signal']}" if rec.get("signal") else "") + ")"
                                                      if run.exit_code is not None else "")]
    f = s.failure
    if f is not None:
        out.append(f"- failure phase: {f.phase or 'unknown'}; exception: {f.exception or 'not shown'}"
                   + (f" on {f.rank}" if f.rank else ""))
        if f.message:
            out.append(f"- message: {shorten(display_text(f.message.splitlines()[0]), 500)}")
        err_text = f.event.text if f.event is not None else (f.message or "")
        lines = [display_text(x) for x in err_text.splitlines()][-ERROR_LINES:]
        if lines:
            out += ["", _fence("\n".join(lines), "text")]
    for fd in s.findings:
        out.append(f"- {fd.message}")
    out.append("")
    sp = s.spec
    out += ["### Speculative decoding", ""]
    if sp.enabled is False:
        out.append("Speculative decoding is off (decode lines carry no accept length).")
    elif not sp.batches:
        out.append("No decode batch with an accept length in the log.")
    else:
        out.append(f"- decode batches with accept length: {sp.batches}")
        out.append(f"- mean accept length: {sp.mean_accept_len:.2f} tokens; last: {sp.last_accept_len:.2f}"
                   + (f"; last accept rate: {sp.last_accept_rate:.2f}" if sp.last_accept_rate is not None else ""))
        if sp.collapsed:
            out.append("- **collapsed**: the last batches all accept 1.00 (every draft token rejected)")
    text = "\n".join(out)
    text = redact(text) if redact is not None else text
    # what the argv and the whole log hold, replaced wherever the report repeats it (a table cell)
    known = argv_secrets(list(run.argv)) | (argv_secrets(list(prev.argv)) if prev is not None else set()) \
        | find_secrets(log_text)
    text, secrets = redact_secrets(text, known)
    text = _no_controls(text)
    return text + "\n".join(["", "", f"<sub>mambaconsole report, {_utc(time.time())}; personal details "
                                 f"{'kept (--no-redact)' if redact is None else 'replaced by placeholders'}; "
                                 f"{secrets} secret{'' if secrets == 1 else 's'} replaced by {PLACEHOLDER}</sub>", ""])


def _no_controls(text: str) -> str:
    """``text`` with every control character but newline written out (``\\x1b``, ``\\r``): an
    escape from the node (an argv, a log line, a host name) never reaches a terminal."""
    return re.sub(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]", lambda m: "\\x%02x" % ord(m.group(0)), text)


# ----------------------------------------------------------------------------- command


async def _main(args) -> str:
    from mambaconsole.node import connect
    from mambaconsole.node.agent import agent_once
    from mambaconsole.node.runs import RunStore

    async with await connect(args.host) as node:
        store = RunStore(node)
        runs = sorted(await store.list(adopt=False), key=lambda r: (r.started or r.record.get("created") or 0, r.run_id))
        if not runs and not args.run:
            raise ConsoleError(f"no runs on {args.host} (start one: mambaconsole launch {args.host} -- ARGS)")
        if args.run:
            idx = next((i for i, r in enumerate(runs) if r.run_id == args.run), None)
            if idx is None:
                raise ConsoleError(f"{args.host}: no run {args.run!r} (see: mambaconsole runs {args.host})")
        else:
            idx = len(runs) - 1
        run = runs[idx]
        prev = runs[idx - 1] if idx > 0 else None
        r = await node.run([args.python, "-c", _FACTS], timeout=60)
        try:
            facts = json.loads(r.out.strip().splitlines()[-1])
        except (ValueError, IndexError):
            facts = {}
        try:
            _, gpu = await agent_once(node, timeout=60)
        except ConsoleError as exc:
            gpu = {"type": "no_gpu", "reason": str(exc)}
        lr = await node.run([args.python, "-c", _READ_LOG, run.log_path, str(LOG_CAP), str(LOG_HEAD)], timeout=120)
        if lr.exit_status != 0:
            raise ConsoleError(f"{args.host}: {lr.err.strip().splitlines()[-1] if lr.err.strip() else 'cannot read the log'}")
        log_text = lr.stdout.decode("utf-8", "replace")
        redact = None
        if not args.no_redact:
            users = {getpass.getuser(), getattr(node, "username", None) or ""}
            hosts = {args.host.split("@")[-1].split(":")[0], getattr(node, "hostname", None) or "",
                     socket.gethostname(), facts.get("hostname") or "", run.record.get("node") or ""}
            for rr in (run, prev):
                if rr is not None:
                    u, h = _identity_parts(rr.record.get("launched_by"))
                    users.add(u or "")
                    hosts.add(h or "")
            redact = Redactor(users=users, homes={facts.get("home") or "", os.path.expanduser("~")}, hosts=hosts)
            for t in (shlex.join(run.argv), shlex.join(prev.argv) if prev else "", log_text, run.log_path):
                redact.learn(t)
        return render(host=args.host, facts=facts, gpu=gpu, run=run, prev=prev, log_text=log_text, redact=redact)


def run(args: argparse.Namespace) -> int:
    text = run_async(_main(args))
    if args.output:
        try:
            with open(args.output, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as exc:
            raise ConsoleError(f"{args.output}: {exc.strerror or exc}") from None
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0
