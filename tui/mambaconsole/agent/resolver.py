"""mambaconsole resolver agent: SGLang ServerArgs resolution with provenance, run ON THE NODE.

Sent on stdin to the server's own python (``python -u - ARGS``); stdlib-only until it imports
the node's ``sglang`` inside. It contains no SGLang logic: it calls SGLang's own
``prepare_server_args(argv)`` (and ``ServerArgs.resolve_once()`` on 0.5.20+), and only watches:

* explicit options: a second parse of the argv with every action's default set to
  ``argparse.SUPPRESS`` (store_true, ``--no-X``, aliases, prefix abbreviations and a value equal
  to the default all count right);
* ``--config`` YAML values: SGLang's own ``ConfigArgumentMerger`` (0.5.9-0.5.18
  ``sglang.srt.server_args_config_parser``, 0.5.20+ ``sglang.srt.utils.server_args_config_parser``);
* every field write (a class-level ``ServerArgs.__setattr__`` wrapper, 0.5.9-0.5.18 mutate fields
  in ``__post_init__``) and every declaration (0.5.15+ ``_resolved_overrides``: the list is swapped
  for a recording subclass), each with old/new value and the writer's function and file:line;
* environment variables SGLang read (``os.environ`` reads of variables set before resolution);
* log records of the ``sglang`` logger;
* failures: type, message, where raised, the last sglang frame, the resolution step.

Usage (argv after ``-``)::

    [--] SGLANG_ARGS...     resolve; print one JSON document (shape: mambaconsole.resolve)
    --params                the parser's option metadata (for the edit form)
    --serve                 warm mode: import and warm up, listen on a private unix socket,
                            print a ``ready`` JSON line with its path, answer each request in a
                            fresh fork; heartbeat lines; exits when stdout closes or when idle
    --planned-device JSON   (before the others) SGLang sees this GPU instead of the node's:
                            ``install_planned_device``; every answer's first messages say so

Everything SGLang prints goes to stderr: this script's JSON is the only thing on stdout.
"""

import argparse
import contextlib
import difflib
import functools
import gc
import json
import logging
import os
import re
import socket
import sys
import tempfile
import time
import traceback
import types

PROTOCOL = 1

_MISSING = object()
_STEP_PARENTS = ("__post_init__", "_run_resolution_pipeline", "run_resolution_pipeline")
_STEP_SKIP = ("run_hook",)
_DECLARE_HELPERS = ("declare_resolution", "run_post_process_pass", "record_foreign_defaults")


class _UsageError(Exception):
    pass


# --------------------------------------------------------------------------------------------
# small helpers


def _jsonable(value, depth=0):
    """``value`` as JSON can hold it; anything else as its Python repr string."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else repr(value)
    if depth < 6 and isinstance(value, (list, tuple)):
        return [_jsonable(v, depth + 1) for v in value]
    if depth < 6 and isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {k: _jsonable(v, depth + 1) for k, v in value.items()}
    try:
        return repr(value)
    except Exception:  # a repr that raises
        return "<%s>" % type(value).__name__


def _same(a, b):
    try:
        return bool(a == b) and type(a) is type(b) or (a is b)
    except Exception:
        return a is b


class _Paths:
    """file paths made relative to the directory holding the ``sglang`` package."""

    def __init__(self):
        self.roots = []

    def set_sglang(self, sglang_module):
        root = os.path.dirname(os.path.dirname(os.path.abspath(sglang_module.__file__)))
        self.roots = [root + os.sep]
        for p in sys.path:
            if p.endswith("site-packages") and (p + os.sep) not in self.roots:
                self.roots.append(p + os.sep)

    def rel(self, path):
        if not path:
            return path
        for root in self.roots:
            if path.startswith(root):
                return path[len(root):]
        return path

    def in_sglang(self, path):
        return ("%ssglang%s" % (os.sep, os.sep)) in path and not path.endswith("resolver.py")


PATHS = _Paths()
_THIS_FILES = set()


def _frame_info(frame):
    code = frame.f_code
    return code.co_name, PATHS.rel(code.co_filename), frame.f_lineno


def _sglang_frames(frame):
    """Frames from ``frame`` outwards that belong to sglang."""
    while frame is not None:
        if PATHS.in_sglang(frame.f_code.co_filename):
            yield frame
        frame = frame.f_back


# --------------------------------------------------------------------------------------------
# recording


class Recorder:
    """Collects writes, declarations, env reads and log records of one resolution, in order."""

    def __init__(self):
        self.active = False
        self.seq = 0
        self.instances = []  # strong references, in order of first write
        self.events = {}  # id(instance) -> [event]
        self.env_reads = []  # (seq, name, function, file)
        self.env_at_start = {}
        self.messages = []
        self.notes = []  # the resolver's own remarks (config quirks), listed first
        self.declared_lists = []

    def next_seq(self):
        self.seq += 1
        return self.seq

    def events_for(self, obj):
        key = id(obj)
        if key not in self.events:
            self.instances.append(obj)
            self.events[key] = []
        return self.events[key]


class _LogHandler(logging.Handler):
    def __init__(self, rec):
        super().__init__(logging.NOTSET)
        self.rec = rec

    def emit(self, record):
        try:
            message = record.getMessage()
        except Exception:
            message = str(record.msg)
        self.rec.messages.append({
            "level": record.levelname,
            "logger": record.name,
            "message": message,
            "file": PATHS.rel(record.pathname) if record.pathname else None,
            "line": record.lineno if record.pathname else None,
            "_seq": self.rec.next_seq(),
            "_function": record.funcName,
        })


def _def_line(code):
    """The line of the ``def`` itself (``co_firstlineno`` is the first decorator's)."""
    import linecache
    line = code.co_firstlineno
    for n in range(line, line + 20):
        text = linecache.getline(code.co_filename, n).lstrip()
        if text.startswith(("def ", "async def ")):
            return n
    return line


def _make_recording_list(rec, owner):
    class RecordingList(list):
        """``_resolved_overrides`` stand-in that records where each declaration was made."""

        def _note(self, entry):
            try:
                source, fields = entry
                fields = dict(fields)
            except Exception:
                return
            frame = sys._getframe(2)
            pass_fn = None
            while frame is not None and frame.f_code.co_name in _DECLARE_HELPERS + ("append", "extend", "_note"):
                if frame.f_code.co_name == "run_post_process_pass":
                    pass_fn = frame.f_locals.get("fn")
                frame = frame.f_back
            if pass_fn is not None and hasattr(pass_fn, "__code__"):
                code = pass_fn.__code__
                where = (getattr(pass_fn, "__name__", code.co_name), PATHS.rel(code.co_filename), _def_line(code))
            elif frame is not None:
                where = _frame_info(frame)
            else:
                where = (str(source), "", 0)
            for name, value in fields.items():
                rec.events_for(owner).append({
                    "seq": rec.next_seq(), "kind": "declare", "field": name, "new": value,
                    "function": where[0], "file": where[1], "line": where[2], "declared_as": str(source),
                    "_entry": id(entry),
                })

        def append(self, entry):
            if rec.active:
                self._note(entry)
            return list.append(self, entry)

        def extend(self, entries):
            entries = list(entries)
            if rec.active:
                for entry in entries:
                    self._note(entry)
            return list.extend(self, entries)

        def __iadd__(self, entries):
            self.extend(entries)
            return self

        def insert(self, index, entry):
            if rec.active:
                self._note(entry)
            return list.insert(self, index, entry)

    return RecordingList


@contextlib.contextmanager
def tracing(ServerArgs, rec, field_names):
    """Install the class-level ``__setattr__`` wrapper for the duration of the block."""
    had_own = "__setattr__" in ServerArgs.__dict__
    own = ServerArgs.__dict__.get("__setattr__")
    base = ServerArgs.__setattr__

    def traced_setattr(self, name, value):
        if not rec.active:
            return base(self, name, value)
        if name == "_resolved_overrides" and type(value) is list:
            caller = sys._getframe(1)
            # declare_resolution makes a new stash and appends to its own reference: keep it
            if caller.f_code.co_name != "declare_resolution":
                value = _make_recording_list(rec, self)(value)
                rec.declared_lists.append(value)
        if name in field_names:
            frame = sys._getframe(1)
            try:
                old = getattr(self, name)
            except Exception:
                old = _MISSING
            base(self, name, value)
            code = frame.f_code
            events = rec.events_for(self)
            if code.co_name == "__init__" and code.co_filename.startswith("<"):
                events.append({"seq": rec.next_seq(), "kind": "init", "field": name, "new": value})
                return
            events.append({
                "seq": rec.next_seq(), "kind": "write", "field": name, "old": old, "new": value,
                "function": code.co_name, "file": PATHS.rel(code.co_filename), "line": frame.f_lineno,
                "declared_as": None,
            })
            return
        return base(self, name, value)

    env_cls = type(os.environ)
    env_getitem = env_cls.__getitem__

    def traced_getitem(self, key):
        value = env_getitem(self, key)
        if rec.active and self is os.environ and key in rec.env_at_start:
            frame = sys._getframe(1)
            for f in _sglang_frames(frame):
                if not f.f_code.co_filename.endswith("environ.py"):
                    rec.env_reads.append((rec.next_seq(), key, f.f_code.co_name, PATHS.rel(f.f_code.co_filename)))
                    break
        return value

    ServerArgs.__setattr__ = traced_setattr
    env_cls.__getitem__ = traced_getitem
    rec.active = True
    try:
        yield
    finally:
        rec.active = False
        env_cls.__getitem__ = env_getitem
        if had_own:
            ServerArgs.__setattr__ = own
        else:
            del ServerArgs.__setattr__


# --------------------------------------------------------------------------------------------
# SGLang access (version differences are looked up, never assumed)


class SG:
    """The node's SGLang, imported lazily."""

    def __init__(self):
        import sglang  # noqa: F401  (the node's own package)
        from sglang.srt import server_args as sa_mod

        PATHS.set_sglang(sglang)
        self.sglang = sglang
        self.mod = sa_mod
        self.ServerArgs = sa_mod.ServerArgs
        self.version = getattr(sglang, "__version__", None)
        if self.version is None:
            try:
                from sglang.version import __version__ as v
                self.version = v
            except Exception:
                self.version = "unknown"
        self.has_resolve_once = hasattr(self.ServerArgs, "resolve_once")

    def parser(self):
        p = argparse.ArgumentParser(prog="sglang serve")
        self.ServerArgs.add_cli_args(p)
        return p

    @functools.lru_cache(maxsize=None)
    def field_names(self):
        try:
            from sglang.srt.arg_groups.arg_utils import record_fields
            return tuple(f.name for f in record_fields(self.ServerArgs))
        except Exception:
            import dataclasses
            return tuple(f.name for f in dataclasses.fields(self.ServerArgs))

    @functools.lru_cache(maxsize=None)
    def field_defaults(self):
        out = {}
        try:
            import msgspec
            if isinstance(self.ServerArgs, type) and issubclass(self.ServerArgs, msgspec.Struct):
                for f in msgspec.structs.fields(self.ServerArgs):
                    if f.default is not msgspec.NODEFAULT:
                        out[f.name] = f.default
                    elif f.default_factory is not msgspec.NODEFAULT:
                        out[f.name] = f.default_factory()
                return out
        except ImportError:
            pass
        import dataclasses
        for f in dataclasses.fields(self.ServerArgs):
            if f.default is not dataclasses.MISSING:
                out[f.name] = f.default
            elif f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
                out[f.name] = f.default_factory()  # type: ignore[misc]
        return out

    def fallback(self, name, value):
        try:
            from sglang.srt.arg_groups.arg_utils import with_fallback
        except Exception:
            return value
        try:
            return with_fallback(self.ServerArgs, name, value)
        except Exception:
            return value

    def config_merger(self, parser):
        for modname in ("sglang.srt.utils.server_args_config_parser", "sglang.srt.server_args_config_parser"):
            try:
                mod = __import__(modname, fromlist=["ConfigArgumentMerger"])
                return mod.ConfigArgumentMerger(parser)
            except ImportError:
                continue
        return None

    @functools.lru_cache(maxsize=None)
    def dest_to_field(self):
        """argparse dest -> ServerArgs field, learned by running SGLang's own ``from_cli_args``
        on a namespace of sentinels with ``__post_init__`` switched off."""
        parser = self.parser()
        sentinels = {}
        ns = argparse.Namespace()
        for action in parser._actions:
            if action.dest in (None, argparse.SUPPRESS, "help"):
                continue
            s = sentinels.setdefault(action.dest, type("_Dest", (), {"dest": action.dest})())
            setattr(ns, action.dest, s)
        cls = self.ServerArgs
        had = "__post_init__" in cls.__dict__
        own = cls.__dict__.get("__post_init__")
        cls.__post_init__ = lambda self: None
        try:
            obj = cls.from_cli_args(ns)
        finally:
            if had:
                cls.__post_init__ = own
            else:
                del cls.__post_init__
        mapping = {}
        by_id = {id(s): d for d, s in sentinels.items()}
        for name in self.field_names():
            v = getattr(obj, name, None)
            if id(v) in by_id:
                mapping.setdefault(by_id[id(v)], name)
        return mapping


def _suppress(parser):
    """``parser`` changed so that a parse yields only the dests given explicitly."""
    for action in parser._actions:
        action.default = argparse.SUPPRESS
        action.required = False
    return parser


@contextlib.contextmanager
def _argparse_raises():
    """argparse's ``error()`` raises :class:`_UsageError` instead of printing and exiting."""
    orig = argparse.ArgumentParser.error

    def error(self, message):
        raise _UsageError("%s: error: %s" % (self.prog, message))

    argparse.ArgumentParser.error = error
    try:
        yield
    finally:
        argparse.ArgumentParser.error = orig


def _explicit(parser, argv):
    """dests given explicitly in ``argv``: {dest: value}; never raises."""
    with _argparse_raises():
        try:
            with open(os.devnull, "w") as devnull, contextlib.redirect_stderr(devnull):
                ns, _rest = parser.parse_known_args(list(argv))
            return vars(ns)
        except (_UsageError, SystemExit, Exception):
            return {}


def _option_strings(parser):
    opts = set()
    for a in parser._actions:
        opts.update(a.option_strings)
    return opts


def _usage_error(sg, parser, message):
    """argparse's usage error, with a suggestion per unrecognized flag from this parser's own
    options (dashes for underscores, a close spelling). What SGLang's releases renamed or
    removed is the console's knowledge (``mambaconsole.sglang.flags``, from every release's
    parser): it replaces these suggestions where it knows the flag."""
    m = re.search(r"unrecognized arguments: (.*)$", message)
    unknown = []
    if m:
        unknown = [t.split("=", 1)[0] for t in m.group(1).split() if t.startswith("-")]
    suggestions = {}
    options = None
    for flag in unknown:
        if options is None:
            options = sorted(_option_strings(parser))
        dashed = flag.replace("_", "-")
        if dashed != flag and dashed in options:
            suggestions[flag] = "unknown in SGLang %s; did you mean `%s`? (SGLang's options use dashes)" % (sg.version, dashed)
            continue
        close = difflib.get_close_matches(flag, options, n=1, cutoff=0.75)
        suggestions[flag] = ("unknown in SGLang %s; did you mean `%s`?" % (sg.version, close[0])) if close else \
            "unknown in SGLang %s" % sg.version
    return {"message": message, "unknown_flags": unknown, "suggestions": suggestions}


def _note(rec, level, message):
    rec.notes.append({"level": level, "logger": "mambaconsole.resolver", "message": message,
                         "file": None, "line": None, "_seq": rec.next_seq(), "_function": None})


def _config_split(sg, argv, rec, parser):
    """(config_part, cli_part) of ``argv`` per SGLang's own merger; quirks become messages."""
    for tok in argv:
        if tok.startswith("--config="):
            _note(rec, "WARNING", "`%s` is silently ignored by SGLang: prepare_server_args only merges a YAML "
                  "given as two words (`--config PATH`)" % tok)
    if "--config" not in argv:
        return [], list(argv)
    merger = sg.config_merger(parser)
    if merger is None:
        return [], list(argv)
    i = argv.index("--config")
    cli_part = list(argv[:i]) + list(argv[i + 2:])
    try:
        with _argparse_raises():
            merged = merger.merge_config_with_args(list(argv))
    except Exception:
        return [], cli_part  # prepare_server_args will raise it and we report that
    if len(merged) >= len(cli_part) and merged[len(merged) - len(cli_part):] == cli_part:
        config_part = merged[:len(merged) - len(cli_part)]
    else:
        config_part = []
    for tok in config_part:
        if tok.startswith("--") and "_" in tok:
            key = tok[2:]
            _note(rec, "WARNING", "YAML key `%s` in %s uses underscores: SGLang passes it on as `%s`, which its "
                  "parser does not know; write `%s`" % (key, argv[i + 1] if i + 1 < len(argv) else "--config",
                                                         tok, key.replace("_", "-")))
    return config_part, cli_part


# --------------------------------------------------------------------------------------------
# one resolution


def _error_info(exc, tb):
    frames = traceback.extract_tb(tb)
    last = frames[-1] if frames else None
    sg_last = None
    for fs in reversed(frames):
        if PATHS.in_sglang(fs.filename):
            sg_last = fs
            break
    step = None
    names = [fs.name for fs in frames]
    for i, name in enumerate(names):
        if name in _STEP_PARENTS:
            for j in range(i + 1, len(names)):
                if names[j] not in _STEP_SKIP and names[j] not in _STEP_PARENTS:
                    step = names[j]
                    break
    return {
        "type": "%s.%s" % (type(exc).__module__, type(exc).__qualname__) if type(exc).__module__ != "builtins"
        else type(exc).__qualname__,
        "message": str(exc),
        "file": PATHS.rel(last.filename) if last else "",
        "line": last.lineno if last else 0,
        "function": last.name if last else "",
        "sglang_file": PATHS.rel(sg_last.filename) if sg_last else None,
        "sglang_line": sg_last.lineno if sg_last else None,
        "step": step,
    }


def resolve(sg, argv, env=None):
    """Resolve ``argv`` with SGLang's own code; the result dict (shape: ``mambaconsole.resolve``)."""
    t0 = time.perf_counter()
    if env:
        os.environ.update({str(k): str(v) for k, v in env.items()})
    rec = Recorder()
    for text in PLANNED_NOTES:
        _note(rec, "INFO", text)
    argv = list(argv)
    out = {"sglang_version": sg.version, "python": sys.executable, "ok": False, "elapsed_s": 0.0,
           "usage_error": None, "error": None, "fields": {}, "messages": []}

    handler = _LogHandler(rec)
    sglang_logger = logging.getLogger("sglang")
    sglang_logger.addHandler(handler)
    field_names = sg.field_names()
    field_set = set(field_names)
    server_args = None
    error = None
    parsers = []  # the parser SGLang builds in prepare_server_args, reused below (building one
    # costs ~0.1 s in 0.5.23, and its choices may depend on the environment of this moment)
    cls = sg.ServerArgs
    add_cli_args = cls.add_cli_args
    own_add = cls.__dict__.get("add_cli_args")

    def capture_add_cli_args(parser, *a, **kw):
        parsers.append(parser)
        return add_cli_args(parser, *a, **kw)

    cuda_before = _cuda_initialized()
    try:
        rec.env_at_start = dict(os.environ)
        cls.add_cli_args = staticmethod(capture_add_cli_args)
        with _argparse_raises(), tracing(sg.ServerArgs, rec, field_set):
            try:
                server_args = sg.mod.prepare_server_args(argv)
                rec.events_for(server_args)
                if sg.has_resolve_once:
                    server_args.resolve_once()
            except _UsageError as exc:
                out["usage_error"] = str(exc)  # completed below, with the parser
            except SystemExit as exc:  # an argparse path that exits without error()
                out["usage_error"] = "sglang exited with status %s while parsing" % exc.code
            except BaseException as exc:  # noqa: BLE001 - every SGLang failure is the answer
                if isinstance(exc, KeyboardInterrupt):
                    raise
                error = exc
                out["error"] = _error_info(exc, exc.__traceback__)
    finally:
        if own_add is not None:
            cls.add_cli_args = own_add
        else:
            del cls.add_cli_args
        sglang_logger.removeHandler(handler)
        # leave no recording list behind (pickling the args elsewhere would need this module)
        if server_args is not None and type(getattr(server_args, "_resolved_overrides", None)).__name__ == "RecordingList":
            try:
                object.__setattr__(server_args, "_resolved_overrides", list(server_args._resolved_overrides))
            except Exception:
                try:
                    sg.ServerArgs.__setattr__(server_args, "_resolved_overrides", list(server_args._resolved_overrides))
                except Exception:
                    pass

    parser = parsers[0] if parsers else sg.parser()
    actions = {}
    for a in parser._actions:
        if a.option_strings and a.dest not in actions and not isinstance(a, argparse._HelpAction):
            actions[a.dest] = (a.default, _canonical_option(a, a.dest))
    config_part, cli_part = _config_split(sg, argv, rec, parser)
    if out["usage_error"] is not None:
        out["usage_error"] = _usage_error(sg, parser, out["usage_error"])
    _suppress(parser)
    given_config = _explicit(parser, config_part) if config_part else {}
    given_cli = _explicit(parser, cli_part)

    if cuda_before is False and _cuda_initialized():
        _note(rec, "INFO", "this resolution initialised CUDA: SGLang queried the GPU (device capability), which "
              "creates a CUDA context on it for the length of the resolution (a few hundred MiB)")
    if out["usage_error"] is None:
        target = server_args if server_args is not None else (rec.instances[0] if rec.instances else None)
        out["fields"] = _fields(sg, target, rec, field_names, actions, given_cli, given_config)
        out["ok"] = error is None
    out["messages"] = [{k: v for k, v in m.items() if not k.startswith("_")} for m in rec.notes + rec.messages]
    out["elapsed_s"] = round(time.perf_counter() - t0, 4)
    return out


def _final_values(sg, obj, field_names):
    if obj is None:
        return {}
    if sg.has_resolve_once:
        try:
            from sglang.srt.arg_groups.overrides import resolution_result
        except Exception:
            resolution_result = None
        if resolution_result is not None:
            vals = {}
            for name in field_names:
                try:
                    vals[name] = resolution_result(obj, name)
                except Exception:
                    vals[name] = getattr(obj, name, None)
            return vals
    return {name: getattr(obj, name, None) for name in field_names}


def _fields(sg, obj, rec, field_names, actions, given_cli, given_config):
    d2f = sg.dest_to_field()
    f2dest = {}
    for dest, field in d2f.items():
        f2dest.setdefault(field, dest)
    class_defaults = sg.field_defaults()
    finals = _final_values(sg, obj, field_names)
    events = rec.events.get(id(obj), []) if obj is not None else []
    env_by_function = {}
    for seq, name, function, file in rec.env_reads:
        env_by_function.setdefault((function, file), []).append((seq, name))

    initial = {}
    for e in events:
        if e["kind"] == "init":
            initial[e["field"]] = e["new"]
    raw = getattr(obj, "_raw_input", None) if obj is not None else None

    result = {}
    current = {}
    for name in field_names:
        dest = f2dest.get(name)
        action = actions.get(dest) if dest else None
        if action is not None:
            default = action[0]
        else:
            default = class_defaults.get(name)
        default = sg.fallback(name, default)
        if isinstance(raw, dict) and name in raw:
            start = sg.fallback(name, raw[name])
        elif name in initial:
            start = initial[name]
        elif obj is not None and not sg.has_resolve_once:
            start = finals.get(name)
        else:
            start = default
        current[name] = start
        result[name] = {"start": start, "default": default, "dest": dest, "action": action, "writes": []}

    last_declared = {}
    for e in sorted(events, key=lambda e: e["seq"]):
        if e["kind"] == "init" or e["field"] not in result:
            continue
        name = e["field"]
        if e["kind"] == "write" and e["function"] == "materialize_declarations" and name in last_declared \
                and _same(last_declared[name], e["new"]):
            current[name] = e["new"]
            continue  # 0.5.15-0.5.18 apply each declaration again as a write: one decision
        old = current[name] if e["kind"] == "declare" else (e["old"] if e["old"] is not _MISSING else current[name])
        if e["kind"] == "declare":
            last_declared[name] = e["new"]
        result[name]["writes"].append({
            "old": old, "new": e["new"], "function": e["function"], "file": e["file"], "line": e["line"],
            "declared_as": e["declared_as"], "_seq": e["seq"],
        })
        current[name] = e["new"]

    fields = {}
    for name in field_names:
        r = result[name]
        dest = r["dest"]
        value = finals.get(name, current[name]) if obj is not None else current[name]
        if dest in given_cli:
            given, given_src = given_cli[dest], "cli"
        elif dest in given_config:
            given, given_src = given_config[dest], "config"
        else:
            given, given_src = None, None
        changed = not _same(value, r["start"]) and bool(r["writes"])
        if not changed:
            source = given_src or "default"
        elif given_src is not None and not (isinstance(given, str) and given == "auto"):
            source = "overridden"
        elif given_src is not None:
            source = "derived"  # an explicit `auto` asks SGLang to choose
        else:
            source = "derived"
            for w in r["writes"]:
                reads = env_by_function.get((w["function"], w["file"]), [])
                if any(seq < w["_seq"] for seq, _ in reads):
                    source = "env"
                    break
        action = r["action"]
        fields[name] = {
            "value": _jsonable(value),
            "default": _jsonable(r["default"]),
            "given": _jsonable(given) if given_src else None,
            "option": action[1] if action is not None else None,
            "source": source,
            "writes": [{k: (_jsonable(v) if k in ("old", "new") else v) for k, v in w.items() if not k.startswith("_")}
                       for w in r["writes"]],
        }
    return fields


def _canonical_option(action, dest):
    want = "--" + dest.replace("_", "-")
    if want in action.option_strings:
        return want
    longs = [o for o in action.option_strings if o.startswith("--")]
    return longs[0] if longs else (action.option_strings[0] if action.option_strings else None)


# --------------------------------------------------------------------------------------------
# parser metadata for the edit form


def params(sg):
    parser = sg.parser()
    d2f = sg.dest_to_field()
    rows = []
    for a in parser._actions:
        if isinstance(a, argparse._HelpAction) or not a.option_strings:
            continue
        choices = a.choices
        if isinstance(choices, (set, frozenset)):
            choices = sorted(choices, key=str)
        elif choices is not None:
            choices = list(choices)
        cls = type(a).__name__
        t = a.type
        rows.append({
            "option_strings": list(a.option_strings),
            "dest": a.dest,
            "field": d2f.get(a.dest),
            "default": _jsonable(a.default),
            "choices": _jsonable(choices),
            "type": None if t is None else getattr(t, "__name__", repr(t)),
            "nargs": _jsonable(a.nargs),
            "const": _jsonable(a.const),
            "required": bool(a.required),
            "help": None if a.help in (None, argparse.SUPPRESS) else str(a.help),
            "hidden": a.help == argparse.SUPPRESS,
            "action": cls,
            "deprecated": "Deprecated" in cls or bool(getattr(a, "deprecated", False)),
            "metavar": _jsonable(a.metavar),
        })
    return {"sglang_version": sg.version, "python": sys.executable, "params": rows}


# --------------------------------------------------------------------------------------------
# warm mode


def _clear_model_config_cache():
    """SGLang caches the model's config.json (``get_config``, lru_cache_frozenset): an edited
    config.json would otherwise be read stale."""
    for modname in ("sglang.srt.utils.hf_transformers.config", "sglang.srt.utils.hf_transformers_utils"):
        mod = sys.modules.get(modname)
        clear = getattr(getattr(mod, "get_config", None), "cache_clear", None) if mod is not None else None
        if callable(clear):
            clear()


def _fresh_child_state(sg):
    """In the warm parent after its warm-up: forget what the warm-up cached (model config,
    hardware probes: every lru_cache in sglang modules), so forks start as cold as a fresh process."""
    _clear_model_config_cache()
    for modname, mod in list(sys.modules.items()):
        if not modname.startswith("sglang") or mod is None:
            continue
        for value in list(getattr(mod, "__dict__", {}).values()):
            # look only at lru_cache wrappers and plain functions: a generic getattr would
            # trigger SGLang's lazy-import placeholders
            if isinstance(value, functools._lru_cache_wrapper):
                clear = value.cache_clear
            elif isinstance(value, types.FunctionType):
                clear = value.__dict__.get("cache_clear")
            else:
                continue
            if callable(clear) and value.__dict__.get("__module__", getattr(value, "__module__", "")) == modname:
                try:
                    clear()
                except Exception:
                    pass


class _DeviceQueryDeferred(Exception):
    """Raised in the warm parent when its warm-up would initialise CUDA (never in a child)."""


@contextlib.contextmanager
def _no_cuda_init():
    """Keep the warm parent from creating a CUDA context: forked children could not use CUDA
    afterwards ("Cannot re-initialize CUDA in forked subprocess"), and the parent would hold
    memory on the running server's GPU. torch's lazy CUDA init raises instead, inside this block."""
    try:
        import torch.cuda
    except Exception:
        yield
        return
    orig = torch.cuda._lazy_init

    def refuse():
        if torch.cuda.is_initialized():
            return orig()
        raise _DeviceQueryDeferred("CUDA initialisation is deferred to the per-resolve fork")

    torch.cuda._lazy_init = refuse
    try:
        yield
    finally:
        torch.cuda._lazy_init = orig


def _cuda_initialized():
    mod = sys.modules.get("torch.cuda")
    try:
        return bool(mod is not None and mod.is_initialized())
    except Exception:
        return False


def _emit_line(stream, obj):
    stream.write((json.dumps(obj) + "\n").encode())
    stream.flush()


def serve(sg, out, idle_timeout, warm_argv):
    """Warm parent: answer each request in a fresh fork of this process."""
    env_snapshot = dict(os.environ)
    t0 = time.perf_counter()
    warm_note = "full"
    if warm_argv:
        with _no_cuda_init():
            try:
                resolve(sg, warm_argv)
            except _DeviceQueryDeferred:
                warm_note = "partial (device query deferred to the fork)"
            except Exception as exc:  # the warm-up result is thrown away
                warm_note = "partial (%s)" % type(exc).__name__
    os.environ.clear()
    os.environ.update(env_snapshot)
    _fresh_child_state(sg)
    gc.collect()
    gc.freeze()  # children's GC leaves the parent's objects alone: fewer copy-on-write page copies
    if _cuda_initialized():
        _emit_line(out, {"event": "error", "message": "CUDA got initialised in the warm parent; use a fresh process per resolve"})
        return 3
    _remove_stale_sockets()
    import signal

    def leave(signum, frame):
        raise SystemExit(0)

    for signum in (signal.SIGHUP, signal.SIGTERM):
        signal.signal(signum, leave)
    sockdir = tempfile.mkdtemp(prefix="mambaconsole-resolver-")
    path = os.path.join(sockdir, "sock")
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    os.chmod(path, 0o600)
    srv.listen(8)
    srv.settimeout(5.0)
    try:
        _emit_line(out, {"event": "ready", "protocol": PROTOCOL, "socket": path, "pid": os.getpid(),
                         "sglang_version": sg.version, "python": sys.executable,
                         "warmup_s": round(time.perf_counter() - t0, 3), "warmup": warm_note,
                         "cuda_initialized": _cuda_initialized()})
        last = time.monotonic()
        while True:
            try:
                conn, _ = srv.accept()
            except socket.timeout:
                _emit_line(out, {"event": "alive"})  # BrokenPipeError here ends us when the console left
                if time.monotonic() - last > idle_timeout:
                    return 0
                continue
            last = time.monotonic()
            with conn:
                conn.settimeout(None)
                _serve_one(sg, conn)
    except (BrokenPipeError, ConnectionResetError):
        return 0
    finally:
        srv.close()
        with contextlib.suppress(OSError):
            os.unlink(path)
        with contextlib.suppress(OSError):
            os.rmdir(sockdir)


def _remove_stale_sockets():
    """Remove socket folders of earlier warm resolvers of this user that nobody listens on
    (one killed with SIGKILL cannot clean up after itself)."""
    base = tempfile.gettempdir()
    try:
        names = os.listdir(base)
    except OSError:
        return
    for name in names:
        if not name.startswith("mambaconsole-resolver-"):
            continue
        d = os.path.join(base, name)
        path = os.path.join(d, "sock")
        try:
            if os.stat(d).st_uid != os.getuid():
                continue
            probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                probe.connect(path)
                continue  # alive: someone else's console
            except OSError:
                pass
            finally:
                probe.close()
            with contextlib.suppress(OSError):
                os.unlink(path)
            os.rmdir(d)
        except OSError:
            continue


def _serve_one(sg, conn):
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
    pid = os.fork()
    if pid == 0:  # child: one resolution, then gone with all its state
        gc.disable()
        code = 0
        try:
            signal_alarm = getattr(__import__("signal"), "alarm", None)
            if signal_alarm:
                signal_alarm(300)
            # the parent cleared every sglang cache after its warm-up and never resolves again;
            # the model config cache once more, cheaply, for certainty
            _clear_model_config_cache()
            request = json.loads(data.decode() or "{}")
            if request.get("params"):
                answer = params(sg)
            else:
                answer = resolve(sg, request.get("argv", []), request.get("env"))
            payload = (json.dumps(answer) + "\n").encode()
            conn.sendall(payload)
        except BaseException:
            code = 1
            with contextlib.suppress(Exception):
                traceback.print_exc()
        finally:
            with contextlib.suppress(Exception):
                conn.close()
            os._exit(code)
    os.waitpid(pid, 0)


#: the tiny client that forwards one request to a warm resolver's socket (sent as ``python -c``)
CLIENT = (
    "import socket,sys\n"
    "s=socket.socket(socket.AF_UNIX,socket.SOCK_STREAM);s.connect(sys.argv[1])\n"
    "s.sendall(sys.stdin.buffer.read().rstrip(b'\\n')+b'\\n')\n"
    "b=b''\n"
    "while True:\n"
    "  c=s.recv(1<<20)\n"
    "  if not c: break\n"
    "  b+=c\n"
    "sys.stdout.buffer.write(b)\n"
)


# --------------------------------------------------------------------------------------------
# a planned device (``--planned-device JSON``): SGLang resolves as on a GPU that is not here


class PlannedDeviceError(RuntimeError):
    """SGLang asked the planned device for something only a real one can answer."""


#: what the answers say of the planned device (each resolution's first messages)
PLANNED_NOTES = []


def _planned_props(dev):
    """``torch.cuda.get_device_properties`` of the planned device: name, major, minor,
    total_memory (bytes); any other property raises :class:`PlannedDeviceError` naming it."""

    class Props:
        name = dev["name"]
        major, minor = int(dev["capability"][0]), int(dev["capability"][1])
        total_memory = int(dev["total_bytes"])

        def __getattr__(self, attr):
            raise PlannedDeviceError("torch.cuda.get_device_properties().%s: the planned device (%s) does not "
                                     "know it; only a real GPU does" % (attr, dev["name"]))

        def __repr__(self):
            return "_CudaDeviceProperties(name=%r, major=%d, minor=%d, total_memory=%dMB, planned)" % (
                self.name, self.major, self.minor, self.total_memory >> 20)

    return Props()


class _KernelStandin:
    """What any name in the stand-in ``sgl_kernel`` is (``sgl_kernel.X``, ``sgl_kernel.m.Y.z``):
    its attributes are stand-ins too (module-level code such as 0.5.11
    ``layers/quantization/utils.py:540`` reads ``scalar_types.uint4b8``), and any use beyond
    naming it (a call, iteration, indexing) raises :class:`PlannedDeviceError` naming it."""

    __slots__ = ("_qualname",)

    def __init__(self, qualname):
        object.__setattr__(self, "_qualname", qualname)

    def __getattr__(self, attr):
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        return _KernelStandin("%s.%s" % (self._qualname, attr))

    def _refuse(self, *args, **kwargs):
        raise PlannedDeviceError("%s was used, but this python has no sgl_kernel: the planned device's stand-in is "
                                 "import-only (argument resolution must not run kernels)" % self._qualname)

    __call__ = __iter__ = __getitem__ = __len__ = __index__ = __int__ = __float__ = _refuse

    def __repr__(self):
        return "<%s: import-only stand-in>" % self._qualname


class _KernelStandinFinder:
    """Meta path finder: ``sgl_kernel`` and every ``sgl_kernel.X`` import as stand-in modules
    whose attributes are :class:`_KernelStandin` (SGLang's CUDA path imports them at module level
    without a fallback, e.g. 0.5.11 ``layers/quantization/fp8_kernel.py:57`` and
    ``gguf.py:39``). Installed only when this python has no ``sgl_kernel``, and only for a
    planned device; nothing in it can run."""

    @classmethod
    def find_spec(cls, fullname, path=None, target=None):
        if fullname != "sgl_kernel" and not fullname.startswith("sgl_kernel."):
            return None
        import importlib.machinery
        return importlib.machinery.ModuleSpec(fullname, cls, is_package=True)

    @staticmethod
    def create_module(spec):
        mod = types.ModuleType(spec.name, "mambaconsole: import-only sgl_kernel stand-in for a planned device")

        def __getattr__(attr):
            if attr.startswith("__") and attr.endswith("__"):
                raise AttributeError(attr)
            return _KernelStandin("%s.%s" % (spec.name, attr))

        mod.__getattr__ = __getattr__
        mod.__mambaconsole_standin__ = True
        return mod

    @staticmethod
    def exec_module(module):
        module.__path__ = []
        module.__version__ = "0+mambaconsole.planned"


def _fake_nvidia_smi(argv, dev):
    """(returncode, stdout, stderr) of an ``nvidia-smi --query-gpu=...`` on the planned device:
    ``index``, ``name``, ``memory.total``, ``memory.free`` (MiB), ``compute_cap``, ``count``;
    any other query fails as nvidia-smi does on an unknown field."""
    query = next((a.split("=", 1)[1] for a in argv if a.startswith("--query-gpu=")), None)
    units = any("nounits" in a for a in argv)
    mib = "" if units else " MiB"
    rows = []
    for i in range(int(dev.get("count", 1))):
        known = {"index": str(i), "name": dev["name"], "memory.total": "%d%s" % (dev["total_bytes"] >> 20, mib),
                 "memory.free": "%d%s" % (dev["total_bytes"] >> 20, mib),
                 "compute_cap": "%d.%d" % tuple(dev["capability"]), "count": str(dev.get("count", 1))}
        fields = (query or "").split(",")
        if query is None or any(f.strip() not in known for f in fields):
            return 2, "", "planned device (%s): nvidia-smi %s is not answered\n" % (dev["name"], " ".join(argv[1:]))
        rows.append(", ".join(known[f.strip()] for f in fields))
    return 0, "\n".join(rows) + "\n", ""


def install_planned_device(dev):
    """Make this process see ``dev`` as its GPU before sglang is imported: ``{"name": str,
    "total_bytes": int, "capability": [major, minor], "count": int, "cuda_version": "12.8"}``.

    Only what SGLang reads of the device is presented, in this process only, and SGLang's own
    code is untouched: ``torch.version.cuda``; ``torch.cuda.is_available / device_count /
    current_device / get_device_name / get_device_capability / get_device_properties /
    mem_get_info`` (free = total: an idle GPU); ``torch.cuda._get_nvml_device_index`` raises, so
    SGLang 0.5.23's ``get_device_sm`` (``utils/common.py:715 _get_device_sm_via_nvml``) falls back
    to torch instead of reading a real GPU through NVML; ``nvidia-smi --query-gpu=...`` run
    through ``subprocess.run`` answers for the planned device (0.5.11/0.5.23
    ``get_nvgpu_memory_capacity`` reads the GPU's memory so); ``sgl_kernel`` gets the import-only
    stand-in of :func:`_kernel_standin` only when this python has none. Returns the notes the
    answer carries (what was assumed)."""
    import importlib.util
    import subprocess

    import torch
    import torch.cuda
    import torch.version

    total, name = int(dev["total_bytes"]), str(dev["name"])
    cap = (int(dev["capability"][0]), int(dev["capability"][1]))
    count = int(dev.get("count", 1))

    def check(device=None):
        index = getattr(device, "index", device)
        if isinstance(index, str):
            index = int(index.rsplit(":", 1)[1]) if ":" in index else 0
        if index is not None and not 0 <= int(index) < count:
            raise PlannedDeviceError("CUDA device %s: the planned node has %d" % (index, count))

    def get_device_name(device=None):
        check(device)
        return name

    def get_device_capability(device=None):
        check(device)
        return cap

    def get_device_properties(device=None):
        check(device)
        return _planned_props(dev)

    def mem_get_info(device=None):
        check(device)
        return (total, total)

    def no_nvml(index):
        raise PlannedDeviceError("planned device: no NVML index (the GPU is not here)")

    torch.version.cuda = str(dev.get("cuda_version") or "12.8")
    torch.cuda.is_available = lambda: True
    torch.cuda.device_count = lambda: count
    torch.cuda.current_device = lambda: 0
    torch.cuda.get_device_name = get_device_name
    torch.cuda.get_device_capability = get_device_capability
    torch.cuda.get_device_properties = get_device_properties
    torch.cuda.mem_get_info = mem_get_info
    torch.cuda._get_nvml_device_index = no_nvml

    run = subprocess.run

    def planned_run(args, *a, **kw):
        argv = [args] if isinstance(args, str) else list(args)
        if argv and os.path.basename(str(argv[0]).split()[0]) == "nvidia-smi":
            if isinstance(args, str):
                argv = args.split()
            code, out, err = _fake_nvidia_smi([str(x) for x in argv], dev)
            text = kw.get("text") or kw.get("universal_newlines") or kw.get("encoding")
            res = subprocess.CompletedProcess(argv, code, out if text else out.encode(), err if text else err.encode())
            if kw.get("check") and code:
                raise subprocess.CalledProcessError(code, argv, res.stdout, res.stderr)
            return res
        return run(args, *a, **kw)

    subprocess.run = planned_run
    notes = ["planned device: %s, %.1f GiB, compute capability %d.%d, CUDA %s, %d GPU(s); SGLang resolved as on it "
             "(torch.cuda answers for it in the resolver only), not measured"
             % (name, total / (1 << 30), cap[0], cap[1], torch.version.cuda, count)]
    if importlib.util.find_spec("sgl_kernel") is None:
        sys.meta_path.insert(0, _KernelStandinFinder)
        notes.append("this python has no sgl_kernel: an import-only stand-in answered SGLang's imports")
    if importlib.util.find_spec("flashinfer") is None:
        notes.append("this python has no flashinfer: SGLang chose its backends as on a GPU node without it "
                     "(a GPU install of SGLang has it)")
    return notes


# --------------------------------------------------------------------------------------------


def main(argv):
    # our JSON owns the real stdout; whatever SGLang or torch prints goes to stderr
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    # torch.cuda.is_available() through NVML: asking does not create a CUDA context (fork-safe)
    os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")

    mode = "resolve"
    idle = 1800.0
    warm_argv = None
    args = list(argv)
    while args and args[0] != "--":
        a = args.pop(0)
        if a == "--params":
            mode = "params"
        elif a == "--serve":
            mode = "serve"
        elif a == "--idle-timeout":
            idle = float(args.pop(0))
        elif a == "--warm-argv":
            warm_argv = json.loads(args.pop(0))
        elif a == "--planned-device":
            import importlib.util
            if importlib.util.find_spec("sglang") is None:  # the same answer as without a planned device
                _emit_line(out, {"ok": False, "fatal": "cannot import sglang: ModuleNotFoundError: No module named "
                                 "'sglang'", "python": sys.executable})
                return 4
            try:
                PLANNED_NOTES[:] = install_planned_device(json.loads(args.pop(0)))
            except Exception as exc:  # no torch in this python, a bad description
                _emit_line(out, {"ok": False, "fatal": "cannot present the planned device: %s: %s"
                                 % (type(exc).__name__, exc), "python": sys.executable})
                return 4
        else:
            args.insert(0, a)
            break
    if args and args[0] == "--":
        args.pop(0)
    try:
        sg = SG()
    except BaseException as exc:  # no sglang, broken env: one JSON line saying so
        _emit_line(out, {"ok": False, "fatal": "cannot import sglang: %s: %s" % (type(exc).__name__, exc),
                         "python": sys.executable})
        return 4
    if mode == "params":
        _emit_line(out, params(sg))
    elif mode == "serve":
        return serve(sg, out, idle, warm_argv)
    else:
        _emit_line(out, resolve(sg, args))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
