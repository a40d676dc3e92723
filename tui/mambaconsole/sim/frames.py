"""Traceback frames of the real SGLang code paths the simulator fails in.

Paths are relative to site-packages; line numbers and source lines are those of the SGLang
0.5.11 / 0.5.23 wheels (``srt/managers/scheduler.py:run_scheduler_process`` down to the
``torch.zeros`` of the pool being allocated).
"""

from __future__ import annotations

_S = "sglang"

_SCHED_0_5_11 = [
    (f"{_S}/srt/managers/scheduler.py", 3918, "run_scheduler_process", "scheduler = Scheduler("),
    (f"{_S}/srt/managers/scheduler.py", 432, "__init__", "self.init_model_worker()"),
    (f"{_S}/srt/managers/scheduler.py", 693, "init_model_worker", "self.init_tp_model_worker()"),
    (f"{_S}/srt/managers/scheduler.py", 648, "init_tp_model_worker", "self.tp_worker = TpModelWorker(**worker_kwargs)"),
    (f"{_S}/srt/managers/tp_worker.py", 260, "__init__", "self._init_model_runner()"),
    (f"{_S}/srt/managers/tp_worker.py", 345, "_init_model_runner", "self._model_runner = ModelRunner("),
    (f"{_S}/srt/model_executor/model_runner.py", 508, "__init__", "self.initialize(pre_model_load_memory)"),
    (f"{_S}/srt/model_executor/model_runner.py", 733, "initialize", "self.init_memory_pool(pre_model_load_memory)"),
    (f"{_S}/srt/model_executor/model_runner_kv_cache_mixin.py", 766, "init_memory_pool", "self._apply_memory_pool_config(self.memory_pool_config)"),
    (f"{_S}/srt/model_executor/model_runner_kv_cache_mixin.py", 727, "_apply_memory_pool_config", "self._init_pools()"),
]
_MAMBA_0_5_11 = [
    (f"{_S}/srt/model_executor/model_runner_kv_cache_mixin.py", 250, "_init_pools", "self.req_to_token_pool = HybridReqToTokenPool("),
    (f"{_S}/srt/mem_cache/memory_pool.py", 515, "__init__", "self._init_mamba_pool("),
    (f"{_S}/srt/mem_cache/memory_pool.py", 535, "_init_mamba_pool", "self.mamba_pool = MambaPool("),
]
_KV_0_5_11 = [
    (f"{_S}/srt/model_executor/model_runner_kv_cache_mixin.py", 503, "_init_pools", "self.token_to_kv_pool = HybridLinearKVPool("),
    (f"{_S}/srt/mem_cache/memory_pool.py", 1317, "__init__", "self.full_kv_pool = TokenToKVPoolClass("),
    (f"{_S}/srt/mem_cache/memory_pool.py", 819, "__init__", "self._create_buffers()"),
]

_SCHED_0_5_23 = [
    (f"{_S}/srt/managers/scheduler.py", 6362, "run_scheduler_process", "scheduler = Scheduler(server_args, port_args)"),
    (f"{_S}/srt/managers/scheduler.py", 568, "__init__", "self.init_model_worker()"),
    (f"{_S}/srt/managers/scheduler.py", 1137, "init_model_worker", "self.init_memory_pools()"),
    (f"{_S}/srt/managers/scheduler.py", 1100, "init_memory_pools", "self.init_target_memory_pool()"),
    (f"{_S}/srt/managers/scheduler.py", 1090, "init_target_memory_pool", "self.tp_worker.alloc_memory_pool("),
    (f"{_S}/srt/managers/tp_worker.py", 409, "alloc_memory_pool", "self.model_runner.alloc_memory_pool("),
    (f"{_S}/srt/model_executor/model_runner.py", 982, "alloc_memory_pool", "result = self.kv_cache_configurator.configure("),
    (f"{_S}/srt/mem_cache/kv_cache_configurator.py", 480, "configure", "pools = self._init_pools("),
]
_MAMBA_0_5_23 = [
    (f"{_S}/srt/mem_cache/kv_cache_configurator.py", 744, "_init_pools", "req_to_token_pool = self._build_req_to_token_pool("),
    (f"{_S}/srt/mem_cache/kv_cache_configurator.py", 1594, "_build_req_to_token_pool", "return self._build_hybrid_req_pool("),
    (f"{_S}/srt/mem_cache/kv_cache_configurator.py", 1718, "_build_hybrid_req_pool", "req_to_token_pool = HybridReqToTokenPool("),
    (f"{_S}/srt/mem_cache/memory_pool.py", 1407, "__init__", "self._init_mamba_pool("),
    (f"{_S}/srt/mem_cache/memory_pool.py", 1445, "_init_mamba_pool", "self.mamba_pool = self.mamba_pool_cls("),
]
_KV_0_5_23 = [
    (f"{_S}/srt/mem_cache/kv_cache_configurator.py", 777, "_init_pools", "token_to_kv_pool = self._build_token_to_kv_pool("),
    (f"{_S}/srt/mem_cache/memory_pool.py", 2293, "__init__", "self._create_buffers()"),
    (f"{_S}/srt/mem_cache/memory_pool.py", 2434, "_create_buffers", "self._create_buffers_normal()"),
]

#: the failing line per allocation name and version
_LEAF = {
    "0.5.11": {
        "conv_state": (f"{_S}/srt/mem_cache/memory_pool.py", 259, "<listcomp>", "torch.zeros("),
        "temporal_state": (f"{_S}/srt/mem_cache/memory_pool.py", 282, "__init__", "temporal_state = torch.zeros("),
        "intermediate_ssm_state_cache": (f"{_S}/srt/mem_cache/memory_pool.py", 290, "__init__", "intermediate_ssm_state_cache = torch.zeros("),
        "intermediate_conv_window_cache": (f"{_S}/srt/mem_cache/memory_pool.py", 313, "<listcomp>", "torch.zeros("),
        "k_buffer": (f"{_S}/srt/mem_cache/memory_pool.py", 897, "_create_buffers", "self.k_buffer = ["),
        "v_buffer": (f"{_S}/srt/mem_cache/memory_pool.py", 905, "_create_buffers", "self.v_buffer = ["),
    },
    "0.5.23": {
        "conv_state": (f"{_S}/srt/mem_cache/memory_pool.py", 738, "__init__", "torch.zeros("),
        "temporal_state": (f"{_S}/srt/mem_cache/memory_pool.py", 749, "__init__", "temporal_state = torch.zeros("),
        "intermediate_ssm_state_cache": (f"{_S}/srt/mem_cache/memory_pool.py", 883, "__init__", "intermediate_ssm_state_cache = torch.zeros("),
        "intermediate_conv_window_cache": (f"{_S}/srt/mem_cache/memory_pool.py", 897, "__init__", "torch.zeros("),
        "k_buffer": (f"{_S}/srt/mem_cache/memory_pool.py", 2593, "_create_buffers_normal", "self.k_buffer = ["),
        "v_buffer": (f"{_S}/srt/mem_cache/memory_pool.py", 2608, "_create_buffers_normal", "self.v_buffer = ["),
    },
}


#: Decode CUDA-graph capture, down to the ``raise Exception("Capture cuda graph failed: ...")``
#: that wraps the RuntimeError (a torch OOM) raised while capturing.
_GRAPH = {
    "0.5.11": _SCHED_0_5_11[:7] + [
        (f"{_S}/srt/model_executor/model_runner.py", 771, "initialize", "self.init_device_graphs()"),
        (f"{_S}/srt/model_executor/model_runner.py", 2792, "init_device_graphs", "self.graph_runner = graph_runners[self.device](self)"),
        (f"{_S}/srt/model_executor/cuda_graph_runner.py", 716, "__init__", "raise Exception("),
    ],
    "0.5.23": _SCHED_0_5_23[:2] + [
        (f"{_S}/srt/managers/scheduler.py", 1146, "init_model_worker", "self.init_all_cuda_graphs()"),
        (f"{_S}/srt/managers/scheduler.py", 1124, "init_all_cuda_graphs", "self.tp_worker.init_cuda_graphs()"),
        (f"{_S}/srt/managers/tp_worker.py", 435, "init_cuda_graphs", "self.model_runner.init_cuda_graphs("),
        (f"{_S}/srt/model_executor/model_runner.py", 1192, "init_cuda_graphs", "capture = capture_cuda_graphs("),
        (f"{_S}/srt/model_executor/model_runner_components/cuda_graph_setup.py", 437, "capture_cuda_graphs", "decode = capture_decode_graph(model_runner=model_runner)"),
        (f"{_S}/srt/model_executor/model_runner_components/cuda_graph_setup.py", 780, "capture_decode_graph", "runner = GraphRunnerCls(model_runner)"),
        (f"{_S}/srt/model_executor/runner/decode_cuda_graph_runner.py", 602, "__init__", "raise Exception("),
    ],
}

#: ``CUDA_GRAPH_CAPTURE_FAILED_MSG``: 0.5.11 model_executor/cuda_graph_runner.py:1431,
#: 0.5.23 model_executor/runner_backend_utils/__init__.py:14
GRAPH_CAPTURE_FAILED_MSG = {
    "0.5.11": (
        "Possible solutions:\n"
        "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)\n"
        "2. set --cuda-graph-max-bs to a smaller value (e.g., 16)\n"
        "3. disable torch compile by not using --enable-torch-compile\n"
        "4. disable CUDA graph by --disable-cuda-graph. (Not recommended. Huge performance loss)\n"
        "Open an issue on GitHub https://github.com/sgl-project/sglang/issues/new/choose \n"
    ),
    "0.5.23": (
        "Possible solutions:\n"
        "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)\n"
        "2. set --cuda-graph-max-bs-decode to a smaller value (e.g., 16)\n"
        "3. disable decode CUDA graph by --cuda-graph-backend-decode=disabled. "
        "(Not recommended. Huge performance loss)\n"
        "Open an issue on GitHub https://github.com/sgl-project/sglang/issues/new/choose \n"
    ),
}


def graph_capture_frames(version: str) -> list[tuple[str, int, str, str]]:
    """Frames from ``run_scheduler_process`` to the decode graph runner's wrapping ``raise``."""
    return list(_GRAPH["0.5.11" if version == "0.5.11" else "0.5.23"])


def oom_frames(version: str, allocation: str) -> list[tuple[str, int, str, str]]:
    """Frames from ``run_scheduler_process`` to the ``torch.zeros`` of ``allocation``
    (a pool; a CUDA-graph capture fails through :func:`graph_capture_frames`)."""
    if version == "0.5.11":
        head, mamba, kv = _SCHED_0_5_11, _MAMBA_0_5_11, _KV_0_5_11
    else:
        head, mamba, kv = _SCHED_0_5_23, _MAMBA_0_5_23, _KV_0_5_23
    middle = kv if allocation in ("k_buffer", "v_buffer") else mamba
    return head + middle + [_LEAF[version][allocation]]


def not_enough_memory_frames(version: str) -> list[tuple[str, int, str, str]]:
    """Frames down to ``MemoryPoolConfig.__post_init__`` (``srt/model_executor/pool_configurator.py``)."""
    if version == "0.5.11":
        return _SCHED_0_5_11[:-2] + [
            (f"{_S}/srt/model_executor/model_runner_kv_cache_mixin.py", 762, "init_memory_pool", "self.memory_pool_config = self._resolve_memory_pool_config("),
            (f"{_S}/srt/model_executor/model_runner_kv_cache_mixin.py", 741, "_resolve_memory_pool_config", "config = configurator.calculate_pool_sizes(available_bytes, page_size)"),
            (f"{_S}/srt/model_executor/pool_configurator.py", 175, "calculate_pool_sizes", "return MemoryPoolConfig(max_total_num_tokens=max_total_num_tokens)"),
            ("<string>", 8, "__init__", ""),
            (f"{_S}/srt/model_executor/pool_configurator.py", 44, "__post_init__", "raise RuntimeError(msg)"),
        ]
    return _SCHED_0_5_23[:-1] + [
        (f"{_S}/srt/mem_cache/kv_cache_configurator.py", 476, "configure", "config = self._resolve_memory_pool_config(pre_model_load_memory)"),
        (f"{_S}/srt/mem_cache/kv_cache_configurator.py", 3183, "_resolve_memory_pool_config", "config = self.config_from_budget(available_bytes)"),
        (f"{_S}/srt/mem_cache/kv_cache_configurator.py", 3204, "config_from_budget", "config = configurator.calculate_pool_sizes("),
        (f"{_S}/srt/model_executor/pool_configurator.py", 647, "calculate_pool_sizes", "return MemoryPoolConfig(max_total_num_tokens=max_total_num_tokens)"),
        ("<string>", 14, "__init__", ""),
        (f"{_S}/srt/model_executor/pool_configurator.py", 99, "__post_init__", "raise RuntimeError(msg)"),
    ]


def mamba_too_small_frames() -> list[tuple[str, int, str, str]]:
    """0.5.23: ``KVCacheConfigurator.resolve_max_num_reqs`` finds no request fits the Mamba cache."""
    return _SCHED_0_5_23[:-1] + [
        (f"{_S}/srt/mem_cache/kv_cache_configurator.py", 476, "configure", "config = self._resolve_memory_pool_config(pre_model_load_memory)"),
        (f"{_S}/srt/mem_cache/kv_cache_configurator.py", 3184, "_resolve_memory_pool_config", "config.max_running_requests = self.resolve_max_num_reqs("),
        (f"{_S}/srt/mem_cache/kv_cache_configurator.py", 3153, "resolve_max_num_reqs", "raise RuntimeError("),
    ]
