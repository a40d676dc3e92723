"""The simulated ServerArgs resolution: what SGLang 0.5.11 / 0.5.23 decide for the seed model.

Only the decisions that matter for the seed scenario are modelled, each after the SGLang
source named beside it; every other field keeps the value parsed from the command line or its
default from the bundled spec. Validation failures carry the exact exception type, message
and traceback frames of that version (messages and frames captured from the real SGLang
resolving the same argv on CPU; see ``../shared/reference/resolver-notes.md`` §2).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mambaconsole.sim.model import GiB, MiB, HybridModel, SimGPU

#: one traceback frame: (path under site-packages or "<...>", line, function, source line or "")
Frame = tuple[str, int, str, str]


@dataclass
class Failure(Exception):
    """A failure the simulated server reports, with the frames of the real one."""

    exc_type: str
    message: str
    frames: list[Frame] = field(default_factory=list)
    #: the fields as resolved up to the failure (set by :func:`resolve`)
    partial: "Resolved | None" = None

    def __str__(self) -> str:
        return f"{self.exc_type}: {self.message}"


@dataclass
class Resolved:
    """Resolved ServerArgs fields plus the log lines SGLang wrote while resolving."""

    version: str
    fields: dict[str, Any]
    warnings: list[str]
    #: fields that SGLang set itself: name -> its writes, in order
    changed: dict[str, list[Write]]

    def __getitem__(self, name: str) -> Any:
        return self.fields[name]

    @property
    def strategy_field(self) -> str:
        return "mamba_scheduler_strategy" if self.version == "0.5.11" else "mamba_radix_cache_strategy"

    @property
    def strategy(self) -> str:
        return self.fields[self.strategy_field]

    @property
    def spec_on(self) -> bool:
        return self.fields.get("speculative_algorithm") is not None

    @property
    def extra_buffer(self) -> bool:
        """SGLang's ``enable_mamba_extra_buffer()``: radix cache on and an extra_buffer strategy."""
        return (not self.fields["disable_radix_cache"]) and self.strategy in ("extra_buffer", "extra_buffer_lazy")

    @property
    def overlap(self) -> bool:
        return not self.fields["disable_overlap_schedule"]


@dataclass(frozen=True)
class Write:
    """One change SGLang makes to a field while resolving: old and new value, the writing
    function and its file:line (relative to site-packages), and the declaration's source name
    (0.5.15+ declarations; None for a plain assignment)."""

    old: Any
    new: Any
    function: str
    file: str
    line: int
    declared_as: str | None = None


_SA = "sglang/srt/server_args.py"
# where SGLang 0.5.11 assigns each field the simulator changes (srt/server_args.py)
_WRITERS_0_5_11 = {
    "tokenizer_path": ("_handle_missing_default_values", _SA, 1062),
    "served_model_name": ("_handle_missing_default_values", _SA, 1064),
    "device": ("_handle_missing_default_values", _SA, 1066),
    "mamba_scheduler_strategy": ("_handle_missing_default_values", _SA, 1082),
    "chunked_prefill_size": ("_handle_gpu_memory_settings", _SA, 1363),
    "cuda_graph_max_bs": ("_handle_gpu_memory_settings", _SA, 1366),
    "mem_fraction_static": ("_handle_gpu_memory_settings", _SA, 1477),
    "page_size": ("_handle_page_size", _SA, 2818),
    "disable_overlap_schedule": ("_handle_mamba_radix_cache", _SA, 2433),
    "attention_backend": ("_handle_attention_backend_compatibility", _SA, 2658),
    "speculative_algorithm": ("_handle_speculative_decoding", _SA, 3311),
    "speculative_num_steps": ("_handle_speculative_decoding", _SA, 3524),
    "speculative_eagle_topk": ("_handle_speculative_decoding", _SA, 3525),
    "speculative_num_draft_tokens": ("_handle_speculative_decoding", _SA, 3526),
    "max_running_requests": ("_handle_speculative_decoding", _SA, 3455),
}
_AG = "sglang/srt/arg_groups"
# 0.5.23 declarations: (function that declares, file, line, declared source name)
_WRITERS_0_5_23 = {
    "tokenizer_path": ("handle_missing_default_values", f"{_AG}/serving_hook.py", 637, "_handle_missing_default_values"),
    "served_model_name": ("handle_missing_default_values", f"{_AG}/serving_hook.py", 643, "_handle_missing_default_values"),
    "device": ("handle_missing_default_values", f"{_AG}/serving_hook.py", 655, "_handle_missing_default_values"),
    "chunked_prefill_size": ("handle_gpu_memory_settings", f"{_AG}/memory_hook.py", 108, "_handle_gpu_memory_settings"),
    "cuda_graph_max_bs": ("handle_gpu_memory_settings", f"{_AG}/memory_hook.py", 108, "_handle_gpu_memory_settings"),
    "mem_fraction_static": ("handle_gpu_memory_settings", f"{_AG}/memory_hook.py", 339, "_handle_gpu_memory_settings"),
    "page_size": ("_page_size_default", f"{_AG}/overrides.py", 1341, "_page_size_default"),
    "attention_backend": ("handle_attention_backend", f"{_AG}/attention_hook.py", 339, "_handle_attention_backend_compatibility"),
    "uses_mamba_radix_cache": ("_mamba_radix_cache_resolution", f"{_AG}/overrides.py", 454, "_mamba_radix_cache_resolution"),
    "mamba_radix_cache_strategy": ("_mamba_radix_cache_resolution", f"{_AG}/overrides.py", 454, "_mamba_radix_cache_resolution"),
    "disable_overlap_schedule": ("_mamba_radix_cache_resolution", f"{_AG}/overrides.py", 454, "_mamba_radix_cache_resolution"),
    "speculative_algorithm": ("handle_speculative_decoding", f"{_AG}/speculative_hook.py", 151, "handle_speculative_decoding"),
    "speculative_num_steps": ("_handle_eagle_family", f"{_AG}/speculative_hook.py", 1168, "_handle_eagle_family.auto_params"),
    "speculative_eagle_topk": ("_handle_eagle_family", f"{_AG}/speculative_hook.py", 1168, "_handle_eagle_family.auto_params"),
    "speculative_num_draft_tokens": ("_handle_eagle_family", f"{_AG}/speculative_hook.py", 1168, "_handle_eagle_family.auto_params"),
    "max_running_requests": ("_handle_eagle_family", f"{_AG}/speculative_hook.py", 1087, "_handle_eagle_family"),
}


def _set(f: dict[str, Any], changed: dict, name: str, value: Any, version: str, writer: tuple | None = None) -> None:
    """Set field ``name`` as SGLang ``version`` does, recording the write in ``changed``
    (``writer``: (function, file, line[, declared_as]) instead of the table's)."""
    if writer is not None:
        func, file, line, declared = (*writer, None)[:4]
    elif version == "0.5.11":
        func, file, line = _WRITERS_0_5_11.get(name, ("__post_init__", _SA, 845))
        declared = None
    else:
        func, file, line, declared = _WRITERS_0_5_23.get(name, ("run_resolution_pipeline", f"{_AG}/pipeline.py", 225, None))
    changed.setdefault(name, []).append(Write(f.get(name), value, func, file, line, declared))
    f[name] = value


_SITE = "sglang"

# Frames of `python -m sglang.launch_server` up to the ServerArgs handler (0.5.11), captured.
_FRAMES_0_5_11_POST_INIT: list[Frame] = [
    ("<frozen runpy>", 198, "_run_module_as_main", ""),
    ("<frozen runpy>", 88, "_run_code", ""),
    (f"{_SITE}/launch_server.py", 66, "<module>", "server_args = prepare_server_args(sys.argv[1:])"),
    (f"{_SITE}/srt/server_args.py", 7299, "prepare_server_args", "return ServerArgs.from_cli_args(raw_args)"),
    (f"{_SITE}/srt/server_args.py", 6685, "from_cli_args", "return cls(**{attr: getattr(args, attr) for attr in attrs})"),
    ("<string>", 371, "__init__", ""),
    (f"{_SITE}/srt/server_args.py", 845, "__post_init__", "self._handle_model_specific_adjustments()"),
    (f"{_SITE}/srt/server_args.py", 2236, "_handle_model_specific_adjustments", "self._handle_mamba_radix_cache("),
]

# Frames of `python -m sglang.launch_server` up to the mamba hook (0.5.23), captured.
_FRAMES_0_5_23_RESOLVE: list[Frame] = [
    ("<frozen runpy>", 198, "_run_module_as_main", ""),
    ("<frozen runpy>", 88, "_run_code", ""),
    (f"{_SITE}/launch_server.py", 84, "<module>", "run_server(server_args)"),
    (f"{_SITE}/launch_server.py", 29, "run_server", "server_args.resolve_once()"),
    (f"{_SITE}/srt/server_args.py", 277, "resolve_once", "run_resolution_pipeline(self)"),
    (f"{_SITE}/srt/arg_groups/pipeline.py", 225, "run_resolution_pipeline", "run_hook(handle_model_specific_adjustments, server_args)"),
    (f"{_SITE}/srt/arg_groups/resolution_hooks.py", 139, "run_hook", "step(server_args)"),
    (f"{_SITE}/srt/arg_groups/model_hook.py", 737, "handle_model_specific_adjustments", "handle_mamba_radix_cache(server_args, hf_config)"),
]


def _gpu_memory_defaults(f: dict[str, Any], gpu: SimGPU, changed: dict, version: str) -> None:
    """``ServerArgs._handle_gpu_memory_settings`` (0.5.11, srt/server_args.py:1294).

    chunked_prefill_size / cuda_graph_max_bs by GPU memory bracket, then
    mem_fraction_static = (gpu_mem - reserved_mem) / gpu_mem with reserved_mem (MiB) =
    512 + 1.5 * max(chunked_prefill_size, 2048) + 2 * cuda_graph_max_bs + tp*pp/8 * 1024,
    at least 10 GiB on GPUs over 60 GiB, plus 4 GiB for EAGLE-family draft models
    (6 GiB STANDALONE), then ``adjust_mem_fraction_for_vlm`` (multimodal model). The
    piecewise-CUDA-graph reserve is not modelled.
    """
    gpu_mem = gpu.total_bytes / MiB
    tp = f.get("tp_size") or 1
    if gpu_mem < 20 * 1024:
        cps, cgbs = 2048, 8
    elif gpu_mem < 35 * 1024:
        cps, cgbs = 2048, 24 if tp < 4 else 80
    elif gpu_mem < 60 * 1024:
        cps, cgbs = 4096, 32 if tp < 4 else 160
    elif gpu_mem < 160 * 1024:
        cps, cgbs = 8192, 256 if tp < 4 else 512
    else:
        cps, cgbs = 16384, 512
    for name, value in (("chunked_prefill_size", cps), ("cuda_graph_max_bs", cgbs)):
        if f.get(name) is None:
            _set(f, changed, name, value, version)
    if f.get("mem_fraction_static") is None:
        reserved = 512 + max(f["chunked_prefill_size"], 2048) * 1.5 + f["cuda_graph_max_bs"] * 2
        reserved += tp * (f.get("pp_size") or 1) / 8 * 1024
        if gpu_mem > 60 * 1024:
            reserved = max(reserved, 10 * 1024)
        algo = f.get("speculative_algorithm")
        if algo == "STANDALONE":
            reserved += 6 * 1024
        elif algo is not None and algo != "NGRAM":
            reserved += 4 * 1024
        value = round((gpu_mem - reserved) / gpu_mem, 3)
        if version == "0.5.11":
            _set(f, changed, "mem_fraction_static", value, version)
            value = value * _vlm_factor()
            _set(f, changed, "mem_fraction_static", value, version, ("adjust_mem_fraction_for_vlm", _SA, 7171))
        else:
            _set(f, changed, "mem_fraction_static", value * _vlm_factor(), version)


def _vlm_factor(vit_layers: int = 24, vit_hidden: int = 1152) -> float:
    """``ServerArgs.adjust_mem_fraction_for_vlm`` for Qwen3.6's vision tower: its config names
    no ``num_hidden_layers`` (SGLang's default 24 applies) and has hidden_size 1152."""
    ratio = vit_layers * vit_hidden**2 / (24 * 1024**2)
    return 0.95 * max(0.8, min(1.05, 1.0 - 0.1 * (ratio - 1.0)))


def _speculative_defaults(f: dict[str, Any], version: str, warnings: list[str], changed: dict) -> None:
    algo = f.get("speculative_algorithm")
    if algo is None:
        return
    if algo == "NEXTN":  # NEXTN is rewritten to EAGLE (all versions)
        if version != "0.5.11":  # 0.5.23 declares the raw name first
            _set(f, changed, "speculative_algorithm", algo, version,
                 ("handle_speculative_decoding", f"{_AG}/speculative_hook.py", 139, "handle_speculative_decoding"))
        _set(f, changed, "speculative_algorithm", "EAGLE", version)
        algo = "EAGLE"
    # auto_choose_speculative_params: (steps, topk, draft tokens) = (3, 1, 4) for this model
    if f.get("speculative_num_steps") is None and f.get("speculative_eagle_topk") is None and f.get("speculative_num_draft_tokens") is None:
        for name, value in (("speculative_num_steps", 3), ("speculative_eagle_topk", 1), ("speculative_num_draft_tokens", 4)):
            _set(f, changed, name, value, version)
    if f.get("speculative_eagle_topk") is None:
        _set(f, changed, "speculative_eagle_topk", 1, version)
    if f.get("speculative_num_steps") is None:
        _set(f, changed, "speculative_num_steps", 3, version)
    if f.get("speculative_num_draft_tokens") is None:
        value = f["speculative_num_steps"] + 1
        _set(f, changed, "speculative_num_draft_tokens", value, version)
    if algo in ("EAGLE", "EAGLE3", "STANDALONE") and f.get("max_running_requests") is None:
        _set(f, changed, "max_running_requests", 48, version)
        # logged by 0.5.11 and 0.5.23 alike
        warnings.append(
            "Max running requests is reset to 48 for speculative decoding. You can override "
            "this by explicitly setting --max-running-requests."
        )


def _mamba_0_5_11(f: dict[str, Any], model: HybridModel, warnings: list[str], changed: dict, version: str = "0.5.11") -> None:
    """``_handle_missing_default_values`` (auto -> no_buffer) and ``_handle_mamba_radix_cache``
    (0.5.11, srt/server_args.py:2366), simulating a CUDA device."""
    arch = model.architecture
    if f["mamba_scheduler_strategy"] == "auto":
        _set(f, changed, "mamba_scheduler_strategy", "no_buffer", version)
    strategy = f["mamba_scheduler_strategy"]
    if strategy == "extra_buffer":
        if f["disable_radix_cache"]:
            raise Failure(
                "ValueError",
                "mamba extra_buffer is not compatible with --disable-radix-cache "
                "Overlap scheduling is already supported with no_buffer + disable_radix_cache. "
                "Please use --mamba-scheduler-strategy no_buffer instead.",
                _FRAMES_0_5_11_POST_INIT + [(f"{_SITE}/srt/server_args.py", 2397, "_handle_mamba_radix_cache", "raise ValueError(")],
            )
        if f.get("device") not in (None, "cuda", "musa"):
            raise Failure(
                "AssertionError",
                "Mamba extra_buffer is only supported on CUDA and MUSA devices with FLA backend",
                _FRAMES_0_5_11_POST_INIT + [(f"{_SITE}/srt/server_args.py", 2403, "_handle_mamba_radix_cache", "assert (")],
            )
        draft = f.get("speculative_num_draft_tokens")
        if draft is not None and not f["mamba_track_interval"] >= draft:
            raise Failure(
                "AssertionError",
                f"mamba_track_interval {f['mamba_track_interval']} must be greater than or equal to "
                f"speculative_num_draft_tokens {draft}",
                _FRAMES_0_5_11_POST_INIT + [(f"{_SITE}/srt/server_args.py", 2407, "_handle_mamba_radix_cache", "assert (")],
            )
    elif not f["disable_radix_cache"]:  # no_buffer with radix cache
        if f.get("page_size") not in (None, 1):
            warnings.append(
                f"{arch} with radix cache requires page_size=1 in the current "
                f"Mamba scheduling mode (no_buffer), but got {f['page_size']}. "
                "Automatically setting page_size=1."
            )
            _set(f, changed, "page_size", 1, version)
        if f.get("speculative_algorithm") is None:
            warnings.append(
                "Disabling overlap schedule since mamba no_buffer is not compatible with "
                "overlap schedule, try to use --disable-radix-cache if overlap schedule is necessary"
            )
            _set(f, changed, "disable_overlap_schedule", True, version)
        else:
            raise Failure(
                "ValueError",
                f"Speculative decoding for {arch} is not compatible with radix cache when using "
                "--mamba-scheduler-strategy no_buffer."
                "To use radix cache with speculative decoding, please use "
                "--mamba-scheduler-strategy extra_buffer and set SGLANG_ENABLE_SPEC_V2=1.",
                _FRAMES_0_5_11_POST_INIT + [(f"{_SITE}/srt/server_args.py", 2453, "_handle_mamba_radix_cache", "raise ValueError(")],
            )


def _mamba_0_5_23(f: dict[str, Any], model: HybridModel, warnings: list[str], changed: dict, version: str = "0.5.23") -> None:
    """``overrides._mamba_radix_cache_resolution`` and ``mamba_hook.validate_mamba_*``
    (0.5.23, srt/arg_groups/), simulating a CUDA device (extra buffer supported)."""
    if f["disable_radix_cache"]:
        return  # resolution skips mamba handling when the radix cache is off
    # handle_model_specific_adjustments declares it False first, the mamba pass then True
    _set(f, changed, "uses_mamba_radix_cache", False, version,
         ("handle_model_specific_adjustments", f"{_AG}/model_hook.py", 155, "_handle_model_specific_adjustments"))
    _set(f, changed, "uses_mamba_radix_cache", True, version)
    strategy = f["mamba_radix_cache_strategy"]
    if strategy == "auto":
        wants_overlap = not f["disable_overlap_schedule"]
        paged = (f.get("page_size") or 1) > 1
        new = "extra_buffer" if (wants_overlap or paged) and f.get("linear_attn_backend", "triton") == "triton" else "no_buffer"
        _set(f, changed, "mamba_radix_cache_strategy", new, version)
        strategy = new
        if new == "no_buffer" and not f["disable_overlap_schedule"]:
            _set(f, changed, "disable_overlap_schedule", True, version)
    if strategy in ("extra_buffer", "extra_buffer_lazy") and f.get("device") not in (None, "cuda", "musa", "npu", "xpu"):
        # the simulated node is a CUDA GPU; an explicit non-GPU --device has no snapshot support
        raise Failure(
            "AssertionError",
            "extra_buffer requires platform support for Mamba cache state snapshots.",
            _FRAMES_0_5_23_RESOLVE
            + [
                (f"{_SITE}/srt/arg_groups/model_hook.py", 1070, "handle_mamba_radix_cache", "validate_mamba_extra_buffer("),
                (f"{_SITE}/srt/arg_groups/mamba_hook.py", 120, "validate_mamba_extra_buffer", "assert _platform_supports_mamba_cache_extra_buffer(), ("),
            ],
        )
    if strategy == "no_buffer":
        if f.get("page_size") not in (None, 1):
            raise Failure(
                "AssertionError",
                "no_buffer only supports page_size=1.",
                _FRAMES_0_5_23_RESOLVE
                + [
                    (f"{_SITE}/srt/arg_groups/model_hook.py", 1076, "handle_mamba_radix_cache", "validate_mamba_no_buffer(view, hf_config.architectures[0])"),
                    (f"{_SITE}/srt/arg_groups/mamba_hook.py", 152, "validate_mamba_no_buffer", "assert view.page_size == 1, \"no_buffer only supports page_size=1.\""),
                ],
            )
        if not f["disable_overlap_schedule"]:
            raise Failure(
                "AssertionError",
                "no_buffer do not support overlap schedule. Try to set disable_overlap_schedule=True.",
                _FRAMES_0_5_23_RESOLVE
                + [
                    (f"{_SITE}/srt/arg_groups/model_hook.py", 1076, "handle_mamba_radix_cache", "validate_mamba_no_buffer(view, hf_config.architectures[0])"),
                    (f"{_SITE}/srt/arg_groups/mamba_hook.py", 158, "validate_mamba_no_buffer", "assert view.disable_overlap_schedule, ("),
                ],
            )


def resolve(version: str, fields: dict[str, Any], model: HybridModel, gpu: SimGPU) -> Resolved:
    """Resolve parsed fields as SGLang ``version`` would on a CUDA GPU; raises :class:`Failure`."""
    f = dict(fields)
    warnings: list[str] = []
    changed: dict[str, tuple[Any, Any]] = {}
    for name in ("tokenizer_path", "served_model_name"):
        if f.get(name) is None:
            _set(f, changed, name, f["model_path"], version)
    if f.get("device") is None:
        _set(f, changed, "device", "cuda", version)
    if f.get("attention_backend") is None:
        _set(f, changed, "attention_backend", "triton", version)
    if version != "0.5.11" and f.get("mamba_full_memory_ratio") is None:
        f["mamba_full_memory_ratio"] = 0.9  # declared fallback (0.5.20+)
    # 0.5.11 ServerArgs.__post_init__ order: GPU memory settings, model-specific (mamba)
    # adjustments, then speculative decoding
    try:
        _gpu_memory_defaults(f, gpu, changed, version)
        if version == "0.5.11":
            _mamba_0_5_11(f, model, warnings, changed)
        else:
            _mamba_0_5_23(f, model, warnings, changed)
        if f.get("page_size") is None:  # 0.5.11 _handle_page_size / 0.5.23 _page_size_default
            _set(f, changed, "page_size", 1, version)
        _speculative_defaults(f, version, warnings, changed)
    except Failure as failure:
        # the state at failure: fields as resolved up to the raise
        failure.partial = Resolved(version=version, fields=f, warnings=warnings, changed=changed)
        raise
    return Resolved(version=version, fields=f, warnings=warnings, changed=changed)


def gib(n_bytes: float) -> float:
    return n_bytes / GiB
