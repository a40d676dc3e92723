"""SGLang's command-line parser for the simulated node.

With the real ``sglang`` importable at the simulated version, the parser is SGLang's own
(``argparse.ArgumentParser(prog="sglang serve")`` + ``ServerArgs.add_cli_args(p)``, as
``sglang.srt.server_args.prepare_server_args`` builds it in 0.5.10+). Otherwise it is rebuilt
from the bundled spec ``specs/sglang-<version>.json``, generated from that real parser by
``scripts/gen_sim_spec.py``: same option strings, order, nargs, choices, metavars and
defaults, so argparse's usage and error text (``sglang serve: error: unrecognized arguments:
...``, exit status 2) come out the same.
"""

from __future__ import annotations

import argparse
import json
from functools import lru_cache
from importlib import resources
from typing import Any

#: SGLang versions the simulator models.
VERSIONS = ("0.5.11", "0.5.23")

#: 0.5.11 argparse dests that ``ServerArgs.from_cli_args`` renames to fields (resolver notes §3).
DEST_TO_FIELD_0_5_11 = {
    "tensor_parallel_size": "tp_size",
    "pipeline_parallel_size": "pp_size",
    "data_parallel_size": "dp_size",
    "attention_context_parallel_size": "attn_cp_size",
    "moe_data_parallel_size": "moe_dp_size",
    "expert_parallel_size": "ep_size",
}


@lru_cache(maxsize=None)
def load_spec(version: str) -> dict[str, Any]:
    """The bundled spec of SGLang ``version``; raises ValueError for a version not bundled."""
    if version not in VERSIONS:
        raise ValueError(f"unsupported --sim-version {version!r}; choose from {', '.join(VERSIONS)}")
    text = resources.files("mambaconsole.sim").joinpath("specs", f"sglang-{version}.json").read_text()
    return json.loads(text)


def _nullable_str(value: str):
    return None if value.lower() in ("null", "none", "") else value


def _human_readable_int(value: str) -> int:
    value = value.strip()
    mult = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
    if value and value[-1].lower() in mult:
        return int(float(value[:-1]) * mult[value[-1].lower()])
    return int(value)


def _json_list(value: str):
    return json.loads(value) if value.strip().startswith("[") else [v for v in value.split(",") if v]


_TYPES = {
    None: None,
    "str": str,
    "int": int,
    "float": float,
    "loads": json.loads,
    "nullable_str": _nullable_str,
    "human_readable_int": _human_readable_int,
    "json_list_type": _json_list,
    "parse_cuda_graph_backend_arg": str,
    "parse_cuda_graph_config_arg": str,
}


class _DeprecatedNoop(argparse.Action):
    """SGLang's ``DeprecatedAction`` (0.5.11): accepted, dest left unset."""

    def __init__(self, option_strings, dest, nargs=0, **kwargs):
        super().__init__(option_strings, dest, nargs=nargs, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        pass


class _AppendLoRA(argparse.Action):
    """SGLang's ``LoRAPathAction``: collects ``--lora-paths`` values."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, list(values) if isinstance(values, list) else [values])


def _build_from_spec(spec: dict[str, Any]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=spec["prog"])
    for a in spec["actions"]:
        kind = a["action"]
        kwargs: dict[str, Any] = {"dest": a["dest"]}
        if a["help"] is not None:
            kwargs["help"] = argparse.SUPPRESS if a["help"] == "==SUPPRESS==" else a["help"].replace("%", "%%")
        if a["required"]:
            kwargs["required"] = True
        if kind in ("_StoreTrueAction", "DeprecatedStoreTrueAction"):
            kwargs.update(action="store_true", default=a["default"])
        elif kind == "_StoreFalseAction":
            kwargs.update(action="store_false", default=a["default"])
        elif kind in ("_StoreConstAction", "DeprecatedStoreConstAction"):
            kwargs.update(action="store_const", const=a["const"], default=a["default"])
        elif kind == "BooleanOptionalAction":
            kwargs.update(action=argparse.BooleanOptionalAction, default=a["default"])
            opts = [o for o in a["option_strings"] if not o.startswith("--no-")]
            parser.add_argument(*opts, **kwargs)
            continue
        elif kind == "DeprecatedAction":
            kwargs.update(action=_DeprecatedNoop, nargs=a["nargs"], default=a["default"])
        else:  # _StoreAction, LoRAPathAction and anything storing values
            if kind == "LoRAPathAction":
                kwargs["action"] = _AppendLoRA
            kwargs["default"] = a["default"]
            if a["nargs"] is not None:
                kwargs["nargs"] = a["nargs"]
            if a["const"] is not None:
                kwargs["const"] = a["const"]
            if a["type"] in _TYPES and _TYPES[a["type"]] is not None:
                kwargs["type"] = _TYPES[a["type"]]
            if a["choices"] is not None:
                kwargs["choices"] = a["choices"]
            if a["metavar"] is not None:
                kwargs["metavar"] = tuple(a["metavar"]) if isinstance(a["metavar"], list) else a["metavar"]
        parser.add_argument(*a["option_strings"], **kwargs)
    return parser


def real_sglang_version() -> str | None:
    """The installed ``sglang`` version, or None when SGLang is not importable here."""
    try:
        from importlib.metadata import PackageNotFoundError, version

        return version("sglang")
    except PackageNotFoundError:
        return None


def build_parser(version: str, *, prefer_real: bool = True) -> tuple[argparse.ArgumentParser, str]:
    """Parser of SGLang ``version`` and where it came from (``"sglang"`` or ``"bundled"``).

    The real parser is used when ``prefer_real`` and the importable ``sglang`` has exactly
    ``version``; importing it needs the server's environment (torch and friends).
    """
    if prefer_real and real_sglang_version() == version:
        try:
            from sglang.srt.server_args import ServerArgs  # type: ignore[import-not-found]

            parser = argparse.ArgumentParser(prog="sglang serve")
            ServerArgs.add_cli_args(parser)
            return parser, "sglang"
        except Exception:  # noqa: BLE001 - an unusable install falls back to the spec
            pass
    return _build_from_spec(load_spec(version)), "bundled"


def field_values(version: str, namespace: argparse.Namespace) -> dict[str, Any]:
    """ServerArgs field values (declaration order) from the spec defaults and a parsed namespace."""
    spec = load_spec(version)
    values = {f["name"]: f["default"] for f in spec["fields"]}
    renames = DEST_TO_FIELD_0_5_11 if version == "0.5.11" else {}
    for dest, value in vars(namespace).items():
        name = renames.get(dest, dest)
        if name in values:
            values[name] = value
    return values
