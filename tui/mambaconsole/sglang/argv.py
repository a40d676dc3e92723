"""The launch command model: parse, edit and render an SGLang launch command shell-safe, and
check it against a parser spec.

Accepted input: ``A=B C=D python3 -m sglang.launch_server --flag value --flag=value ...``,
``sglang serve ...``, ``python -m sglang.launch_server ...``, shell line continuations, quoted
values (escaped JSON), a wrapper before the launcher (``docker run ... python3 -m
sglang.launch_server``), or a mapping of flag names to values (a deployment script's dict,
keys with dashes like CLI flags, :meth:`LaunchCommand.from_mapping`).

Flags are matched by the ServerArgs field they set (``--tp``/``--tp-size``/
``--tensor-parallel-size`` → ``tp_size``, ``--model`` → ``model_path``); editing a field
rewrites its token in place (also when it was written with an older name) instead of adding a
second, conflicting flag. Rendering quotes every element with :func:`shlex.quote` /
:func:`shlex.join`.

:class:`ParserSpec` is the node's own parser, as reported from ``parser._actions`` (the JSON
shape of ``scripts/gen_sim_spec.py`` / the agent: ``{"sglang_version", "actions": [{
"option_strings", "dest", "nargs", "type", "choices", "default", "action", "help"}]}``).
:meth:`LaunchCommand.check` names unknown flags, renamed flags (the renames every release
names, :mod:`mambaconsole.sglang.flags`, and deprecated-alias actions in the spec), ambiguous abbreviations,
bad choices and values of the wrong type.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from mambaconsole.errors import ConsoleError

__all__ = [
    "LaunchArg", "LaunchCommand", "ParserSpec", "OptionSpec", "ArgProblem",
    "flag_field", "renamed_flag",
]

#: option strings that set a field under another name (all versions of the inspected set;
#: 0.5.5–0.5.11 argparse dests like tensor_parallel_size are renamed by from_cli_args)
_ALIASES: dict[str, str] = {
    "--model": "model_path", "--model-path": "model_path",
    "--tp": "tp_size", "--tp-size": "tp_size", "--tensor-parallel-size": "tp_size",
    "--dp": "dp_size", "--dp-size": "dp_size", "--data-parallel-size": "dp_size",
    "--pp": "pp_size", "--pp-size": "pp_size", "--pipeline-parallel-size": "pp_size",
    "--ep": "ep_size", "--ep-size": "ep_size", "--expert-parallel-size": "ep_size",
    "--attn-cp-size": "attn_cp_size", "--attention-context-parallel-size": "attn_cp_size",
    "--moe-dp-size": "moe_dp_size", "--moe-data-parallel-size": "moe_dp_size",
    "--speculative-draft-model": "speculative_draft_model_path",
    "--nccl-init-addr": "dist_init_addr",
    "--enable-hicache": "enable_hierarchical_cache",
    "--mamba-scheduler-strategy": "mamba_radix_cache_strategy",
    "--mamba-radix-cache-strategy": "mamba_radix_cache_strategy",
}
_DEST_TO_FIELD = {
    "tensor_parallel_size": "tp_size", "pipeline_parallel_size": "pp_size",
    "data_parallel_size": "dp_size", "attention_context_parallel_size": "attn_cp_size",
    "moe_data_parallel_size": "moe_dp_size", "expert_parallel_size": "ep_size",
    "mamba_scheduler_strategy": "mamba_radix_cache_strategy",
}
_BARE_PREFIXES = ("--enable-", "--disable-", "--no-", "--skip-", "--trust-remote-code", "--is-embedding")
_ENV_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_LAUNCHERS = ("sglang.launch_server", "sglang.launch_server.py", "launch_server.py")


def flag_field(flag: str) -> str:
    """The ServerArgs field a flag sets, without a parser: ``--tp=8``/``--tp`` → ``tp_size``,
    ``--mamba-scheduler-strategy`` → ``mamba_radix_cache_strategy`` (same field, older name),
    ``model_path`` → ``model_path``."""
    f = flag.split("=", 1)[0]
    if not f.startswith("-"):
        f = "--" + f.replace("_", "-")
    if f in _ALIASES:
        return _ALIASES[f]
    dest = f.lstrip("-").replace("-", "_")
    return _DEST_TO_FIELD.get(dest, dest)


def renamed_flag(flag: str, version: str | None) -> tuple[str, str] | None:
    """``(new_flag, status)`` when ``flag`` was renamed: status ``"deprecated"`` (still
    accepted as an alias by ``version``), ``"removed"`` (an error there), ``"old"`` (not yet
    renamed in that version, or version unknown). Every rename SGLang's own parsers name
    (:mod:`mambaconsole.sglang.flags`, 0.5.9-0.5.23), the one table."""
    from mambaconsole.sglang import flags

    new = flags.replacement(flag, version) or flags.replacement(flag, flags.VERSIONS[-1])
    if new is None:
        return None
    st = flags.status(flag, version)
    return new, {"deprecated": "deprecated", "removed": "removed"}.get(st, "old")


@dataclass(frozen=True)
class LaunchArg:
    """One command-line item: ``flag`` as written (``--tp``), ``value`` (None for a bare
    flag), ``joined`` when written ``--flag=value``. A positional token has flag None."""

    flag: str | None
    value: str | None = None
    joined: bool = False

    def tokens(self) -> list[str]:
        if self.flag is None:
            return [self.value or ""]
        if self.value is None:
            return [self.flag]
        if self.joined:
            return [f"{self.flag}={self.value}"]
        return [self.flag, self.value]


@dataclass(frozen=True)
class OptionSpec:
    option_strings: tuple[str, ...]
    dest: str
    takes_value: bool
    type: str | None = None
    choices: tuple[Any, ...] | None = None
    default: Any = None
    action: str = ""
    help: str | None = None

    @property
    def deprecated(self) -> bool:
        return "Deprecated" in self.action

    @property
    def field(self) -> str:
        return _DEST_TO_FIELD.get(self.dest, self.dest)


@dataclass(frozen=True)
class ParserSpec:
    """The node's SGLang parser (option strings, dests, choices, types) for one version."""

    version: str | None
    options: tuple[OptionSpec, ...]
    by_flag: dict[str, OptionSpec] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | str) -> "ParserSpec":
        """From ``{"sglang_version": ..., "actions": [...]}`` (or its JSON text). Raises
        ConsoleError when the shape is wrong."""
        if isinstance(data, str):
            try:
                data = json.loads(data)
            except ValueError as exc:
                raise ConsoleError(f"parser spec is not JSON: {exc}") from None
        actions = data.get("actions") if isinstance(data, Mapping) else None
        if not isinstance(actions, list):
            raise ConsoleError("parser spec has no 'actions' list")
        opts = []
        for a in actions:
            if not isinstance(a, Mapping) or not a.get("option_strings"):
                continue
            nargs = a.get("nargs")
            action = str(a.get("action") or "")
            takes = not (nargs == 0 or "StoreTrue" in action or "StoreFalse" in action
                         or "StoreConst" in action or "BooleanOptional" in action or action in ("_HelpAction", "_VersionAction", "_CountAction"))
            ch = a.get("choices")
            opts.append(OptionSpec(option_strings=tuple(a["option_strings"]), dest=str(a.get("dest")),
                                   takes_value=takes, type=a.get("type"),
                                   choices=tuple(ch) if isinstance(ch, list) else None,
                                   default=a.get("default"), action=action, help=a.get("help")))
        by = {s: o for o in opts for s in o.option_strings}
        return cls(version=data.get("sglang_version"), options=tuple(opts), by_flag=by)

    def lookup(self, flag: str) -> tuple[OptionSpec | None, list[str]]:
        """(option, candidates): exact match, else argparse's unique-prefix abbreviation;
        candidates lists the option strings an ambiguous abbreviation matches."""
        o = self.by_flag.get(flag)
        if o is not None:
            return o, [flag]
        if flag.startswith("--"):
            cands = [s for s in self.by_flag if s.startswith(flag)]
            if len(cands) == 1:
                return self.by_flag[cands[0]], cands
            return None, cands
        return None, []

    def option_for_field(self, name: str) -> OptionSpec | None:
        best = None
        for o in self.options:
            if o.field == name or o.dest == name:
                if not o.deprecated:
                    return o
                best = best or o
        return best


@dataclass(frozen=True)
class ArgProblem:
    """``kind``: unknown | renamed | ambiguous | missing_value | bad_choice | bad_type |
    duplicate; ``flag`` as written; ``suggestion``: the flag to use instead, when known."""

    kind: str
    flag: str
    message: str
    suggestion: str | None = None


def _unwrap(text: str) -> str:
    """``text`` with its line continuations removed as a POSIX shell does: a backslash-newline
    (or backslash-CRLF, from a script edited on Windows) outside single quotes is dropped;
    inside single quotes both characters are the value's own (``A='\\<newline>'``)."""
    out: list[str] = []
    i, n, quote = 0, len(text), ""
    while i < n:
        c = text[i]
        if quote == "'":
            quote = "" if c == "'" else quote
            out.append(c)
            i += 1
        elif c == "\\":
            if text[i + 1:i + 2] == "\n":
                i += 2
            elif text[i + 1:i + 3] == "\r\n":
                i += 3
            else:  # an escaped character (a quote, a backslash) stays escaped for shlex
                out.append(text[i:i + 2])
                i += 2
        else:
            if c == quote:
                quote = ""
            elif not quote and c in "'\"":
                quote = c
            out.append(c)
            i += 1
    return "".join(out)


@dataclass(frozen=True)
class LaunchCommand:
    """A launch command: ``env`` assignments, ``program`` (everything up to and including the
    launcher: ``python3 -m sglang.launch_server``, ``sglang serve``), ``args``."""

    env: tuple[tuple[str, str], ...] = ()
    program: tuple[str, ...] = ("python3", "-m", "sglang.launch_server")
    args: tuple[LaunchArg, ...] = ()

    # -- construction -----------------------------------------------------------------

    @classmethod
    def parse(cls, command: str | Iterable[str], spec: ParserSpec | None = None) -> "LaunchCommand":
        """Parse shell text (POSIX quoting, ``\\``-newline continuations) or an argv list.
        With ``spec``, bare flags (store_true) are told from flags with values by the
        parser; without it, by name (``--enable-*``, ``--disable-*``, ...). Raises
        ConsoleError for unbalanced quotes or an empty command."""
        if isinstance(command, str):
            try:
                tokens = shlex.split(_unwrap(command), comments=False, posix=True)
            except ValueError as exc:
                raise ConsoleError(f"cannot parse the launch command: {exc}") from None
        else:
            tokens = [str(t) for t in command]
        if not tokens:
            raise ConsoleError("empty launch command")
        i = 0
        env: list[tuple[str, str]] = []
        if tokens and tokens[0] == "env":
            i = 1
        while i < len(tokens) and _ENV_RE.match(tokens[i]):
            k, v = tokens[i].split("=", 1)
            env.append((k, v))
            i += 1
        # the launcher: everything up to it is the program
        end = None
        for j in range(i, len(tokens)):
            t = tokens[j]
            if t in _LAUNCHERS or t.endswith("/launch_server.py"):
                end = j + 1
                break
            if t == "serve" and j > i and tokens[j - 1].endswith("sglang"):
                end = j + 1
                break
        if end is None:
            # another program (``python -m mambaconsole.sim``, a wrapper script): everything
            # before the first ``--flag`` (its own short options included)
            end = i
            while end < len(tokens) and not (tokens[end].startswith("--") and len(tokens[end]) > 2):
                end += 1
        program = tuple(tokens[i:end])
        args: list[LaunchArg] = []
        j = end
        while j < len(tokens):
            t = tokens[j]
            if t.startswith("--") and len(t) > 2:
                if "=" in t:
                    f, v = t.split("=", 1)
                    args.append(LaunchArg(f, v, True))
                    j += 1
                    continue
                takes = cls._takes_value(t, spec)
                nxt = tokens[j + 1] if j + 1 < len(tokens) else None
                if takes and nxt is not None and (not nxt.startswith("-") or re.match(r"^-\d", nxt)):
                    args.append(LaunchArg(t, nxt, False))
                    j += 2
                    continue
                args.append(LaunchArg(t, None, False))
                j += 1
                continue
            args.append(LaunchArg(None, t, False))
            j += 1
        return cls(env=tuple(env), program=program or ("python3", "-m", "sglang.launch_server"), args=tuple(args))

    @staticmethod
    def _takes_value(flag: str, spec: ParserSpec | None) -> bool:
        if spec is not None:
            o, _ = spec.lookup(flag)
            if o is not None:
                return o.takes_value
        return not flag.startswith(_BARE_PREFIXES)

    @classmethod
    def from_mapping(cls, options: Mapping[str, Any], program: Iterable[str] = ("python3", "-m", "sglang.launch_server"),
                     env: Mapping[str, str] | None = None) -> "LaunchCommand":
        """From ``{"flag-name": value}`` (keys with or without ``--``, dashes or
        underscores): True → bare flag, False/None → omitted, dict/list → JSON text."""
        args = []
        for k, v in options.items():
            flag = k if k.startswith("--") else "--" + k.replace("_", "-")
            if v is True:
                args.append(LaunchArg(flag))
            elif v is False or v is None:
                continue
            elif isinstance(v, (dict, list)):
                args.append(LaunchArg(flag, json.dumps(v, separators=(",", ":"))))
            else:
                args.append(LaunchArg(flag, str(v)))
        return cls(env=tuple((env or {}).items()), program=tuple(program), args=tuple(args))

    # -- reading ----------------------------------------------------------------------

    def _field_of(self, flag: str, spec: ParserSpec | None) -> str:
        if spec is not None:
            o, _ = spec.lookup(flag)
            if o is not None:
                return o.field
        return flag_field(flag)

    def _positional_model(self) -> int | None:
        """Position in ``args`` of ``sglang serve MODEL``'s positional model path (the
        ``sglang serve`` CLI, 0.5.19+, takes the model as its first positional argument and
        ``--model-path`` too); None for other launchers or without one."""
        if self.program[-1:] != ("serve",):
            return None
        return next((i for i, a in enumerate(self.args) if a.flag is None), None)

    def indexes(self, name: str, spec: ParserSpec | None = None) -> list[int]:
        """Positions in ``args`` of every flag that sets the field ``name`` (a field name or
        any of its flags), the positional model path of ``sglang serve`` for ``model_path``."""
        target = self._field_of(name, spec) if name.startswith("-") else flag_field(name)
        out = [i for i, a in enumerate(self.args) if a.flag is not None and self._field_of(a.flag, spec) == target]
        pos = self._positional_model() if target == "model_path" else None
        return sorted(out + [pos]) if pos is not None else out

    def get(self, name: str, spec: ParserSpec | None = None) -> str | bool | None:
        """The value given for a field (the last occurrence wins, as argparse does); True for
        a bare flag; None when absent."""
        idx = self.indexes(name, spec)
        if not idx:
            return None
        a = self.args[idx[-1]]
        return True if a.value is None else a.value

    def by_field(self, spec: ParserSpec | None = None) -> dict[str, LaunchArg]:
        """Every given field → the item that sets it (the last occurrence wins, as argparse
        does), in the order the fields first appear; the flag is kept as written."""
        out: dict[str, LaunchArg] = {}
        pos = self._positional_model()
        for i, a in enumerate(self.args):
            if a.flag is not None:
                out[self._field_of(a.flag, spec)] = a
            elif i == pos:
                out["model_path"] = a
        return out

    def fields(self, spec: ParserSpec | None = None) -> dict[str, str | bool]:
        """Every given field → its value (bare flags True), last occurrence wins."""
        return {k: True if a.value is None else a.value for k, a in self.by_field(spec).items()}

    @property
    def env_dict(self) -> dict[str, str]:
        return dict(self.env)

    # -- editing ----------------------------------------------------------------------

    def set(self, name: str, value: str | int | float | bool | None, spec: ParserSpec | None = None) -> "LaunchCommand":
        """A copy with field ``name`` set: the first token that sets it is rewritten in place
        (keeping ``=`` style; renamed to the spec's current flag when the written one is
        deprecated or unknown there), later duplicates are dropped; appended when absent.
        ``True`` → bare flag, ``None``/``False`` → removed. A value that starts with ``-`` is
        written ``--flag=value`` (argparse would read ``--flag -x`` as two options)."""
        if value is None or value is False:
            return self.remove(name, spec)
        idx = self.indexes(name, spec)
        text = None if value is True else (json.dumps(value) if isinstance(value, (dict, list)) else str(value))
        args = list(self.args)
        if idx:
            first = args[idx[0]]
            if first.flag is None:  # sglang serve's positional model path: stays positional
                args[idx[0]] = LaunchArg(None, text, False)
                for k in reversed(idx[1:]):
                    del args[k]
                return replace(self, args=tuple(args))
            flag = first.flag or name
            if spec is not None:
                o, _ = spec.lookup(flag)
                if o is None or o.deprecated:
                    cur = spec.option_for_field(self._field_of(flag, spec))
                    if cur is not None and not cur.deprecated:
                        flag = cur.option_strings[0]
            args[idx[0]] = LaunchArg(flag, text, text is not None and (first.joined or _dashed(text)))
            for k in reversed(idx[1:]):
                del args[k]
        else:
            flag = name if name.startswith("--") else None
            if flag is None:
                o = spec.option_for_field(name) if spec is not None else None
                flag = o.option_strings[0] if o is not None else "--" + name.replace("_", "-")
            args.append(LaunchArg(flag, text, text is not None and _dashed(text)))
        return replace(self, args=tuple(args))

    def remove(self, name: str, spec: ParserSpec | None = None) -> "LaunchCommand":
        idx = set(self.indexes(name, spec))
        return replace(self, args=tuple(a for i, a in enumerate(self.args) if i not in idx))

    def set_env(self, key: str, value: str | None) -> "LaunchCommand":
        """A copy with env ``key`` set (in place) or removed (value None)."""
        if not _ENV_RE.match(key + "="):
            raise ConsoleError(f"not an environment variable name: {key!r}")
        env = [(k, v) for k, v in self.env if k != key or value is not None]
        if value is not None:
            for n, (k, _) in enumerate(env):
                if k == key:
                    env[n] = (key, value)
                    break
            else:
                env.append((key, value))
        return replace(self, env=tuple(env))

    # -- output -----------------------------------------------------------------------

    def argv(self) -> list[str]:
        out = list(self.program)
        for a in self.args:
            out.extend(a.tokens())
        return out

    def render(self, multiline: bool = False) -> str:
        """Shell text: env as ``K=V`` (value quoted), argv with :func:`shlex.join`.
        ``multiline`` puts each flag on its own ``\\``-continued line."""
        env = [f"{k}={shlex.quote(v)}" for k, v in self.env]
        if not multiline:
            return " ".join(env + [shlex.join(self.argv())])
        lines = env + [shlex.join(self.program)] + ["    " + shlex.join(a.tokens()) for a in self.args]
        return " \\\n".join(lines)

    # -- checking ---------------------------------------------------------------------

    def check(self, spec: ParserSpec | None = None, version: str | None = None) -> list[ArgProblem]:
        """Problems of this command for a parser (``spec``) and/or SGLang ``version``:
        unknown flags, renamed ones (with the flag to use), ambiguous abbreviations, missing
        values, values outside ``choices`` and values of the wrong type, duplicates."""
        version = version or (spec.version if spec is not None else None)
        out: list[ArgProblem] = []
        seen: dict[str, str] = {}
        pos = self._positional_model()
        for i, a in enumerate(self.args):
            if a.flag is None:
                if i != pos:  # sglang serve's model path is a positional
                    out.append(ArgProblem("unknown", a.value or "", f"unexpected positional argument {a.value!r}"))
                continue
            flag = a.flag
            ren = renamed_flag(flag, version)
            o = None
            if spec is not None:
                o, cands = spec.lookup(flag)
                if o is None:
                    if len(cands) > 1:
                        out.append(ArgProblem("ambiguous", flag, f"{flag} is ambiguous: could match {', '.join(cands[:6])}"))
                        continue
                    if ren is not None:
                        out.append(ArgProblem("renamed", flag, f"{flag} was renamed to {ren[0]}; this SGLang"
                                                               f"{' ' + version if version else ''} does not accept it", ren[0]))
                    else:
                        out.append(ArgProblem("unknown", flag, f"unrecognized argument: {flag}"))
                    continue
                if o.deprecated or (ren is not None and ren[1] == "deprecated"):
                    cur = spec.option_for_field(o.field)
                    new = ren[0] if ren else (cur.option_strings[0] if cur is not None and not cur.deprecated else None)
                    out.append(ArgProblem("renamed", flag, f"{flag} is a deprecated alias"
                                                           + (f"; use {new}" if new else ""), new))
            elif ren is not None and ren[1] in ("deprecated", "removed"):
                word = "a deprecated alias" if ren[1] == "deprecated" else "not accepted"
                out.append(ArgProblem("renamed", flag, f"{flag} is {word} in SGLang {version}; use {ren[0]}", ren[0]))
            field_name = o.field if o is not None else flag_field(flag)
            if field_name in seen and seen[field_name] != flag:
                out.append(ArgProblem("duplicate", flag, f"{flag} sets {field_name} again (also {seen[field_name]}); the last one wins"))
            seen[field_name] = flag
            if o is None:
                continue
            if o.takes_value and a.value is None:
                out.append(ArgProblem("missing_value", flag, f"{flag} expects a value"))
                continue
            if not o.takes_value and a.value is not None and a.joined:
                out.append(ArgProblem("bad_type", flag, f"{flag} takes no value"))
                continue
            if a.value is None:
                continue
            if o.choices is not None and a.value not in [str(c) for c in o.choices]:
                out.append(ArgProblem("bad_choice", flag, f"{flag}: invalid choice {a.value!r} "
                                                          f"(choose from {', '.join(map(str, o.choices))})"))
            elif not _type_ok(o.type, a.value):
                out.append(ArgProblem("bad_type", flag, f"{flag}: {a.value!r} is not a valid {o.type}"))
        return out


def _dashed(value: str) -> bool:
    """Whether argparse would take ``value`` after a flag for an option (``-x``, not ``-1``)."""
    return value.startswith("-") and not re.match(r"^-\d", value)


def _type_ok(type_name: str | None, value: str) -> bool:
    try:
        if type_name == "int":
            int(value)
        elif type_name == "float":
            float(value)
        elif type_name == "human_readable_int":
            v = value.strip()
            int(float(v[:-1])) if v and v[-1].lower() in "kmgt" else int(v)
        elif type_name == "loads":
            json.loads(value)
    except ValueError:
        return False
    return True
