"""The simulated SGLang node: ``python -m mambaconsole.sim [--sim-*] SGLANG_ARGS...``.

A process that, seen from outside, is an SGLang 0.5.11 or 0.5.23 server serving Qwen3.6-27B on
one simulated 96 GiB GPU (no GPU needed): SGLang's flags and argparse errors, its log lines,
``/health``, ``/server_info``, ``/get_server_info``, ``/model_info``, ``/metrics``, and a GPU
readings file for the agent's ``sim`` backend. Modules: :mod:`~mambaconsole.sim.server` (the
process), :mod:`~mambaconsole.sim.memory` (the memory arithmetic), :mod:`~mambaconsole.sim.resolve`
(argument resolution), :mod:`~mambaconsole.sim.demo` (the demo's scenario commands and home).
"""
