"""TEST-ONLY: makes SGLang 0.5.23 take its Intel-AMX CPU path, for the real hybrid (Qwen3-Next)
servers the tests launch (tests/fixtures/real_sglang.py, ``server_env(cpu_kernels=True)``).
Never ship it.

Python imports ``sitecustomize`` from ``PYTHONPATH`` at start-up; this directory is on the
hybrid servers' ``PYTHONPATH`` only (never on the plain Qwen3's, whose test asserts no stand-in
is called).

Why: SGLang 0.5.23's hybrid layers take their CPU kernels only when ``cpu_has_amx_support()``
(``sglang/srt/utils/common.py:371``) is True: ``torch.cpu._is_amx_tile_supported()``, read once
at import (``common.py:366``), and ``torch.ops.sgl_kernel.convert_weight_packed`` registered
(``common.py:358``; the plain-torch stand-ins in ``sgl_kernel/cpu_ops.py`` register it).
Otherwise ``kernels/ops/attention/fla/fused_norm_gate.py:20`` and ``layernorm_gated.py:35`` pick
Triton, which fails with no GPU. So that the tests do not depend on this host's CPU flags, the
AMX query answers True: once ``torch`` has been imported, ``torch.cpu._is_amx_tile_supported``
is replaced by a function returning True. Nothing else of torch is touched, and torch is not
imported here (a process that never imports it pays nothing).
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys


def _report_amx(torch_module) -> None:
    torch_module.cpu._is_amx_tile_supported = lambda: True


class _AfterTorchImport(importlib.abc.MetaPathFinder):
    """Finds ``torch`` like the rest of ``sys.meta_path`` would, and runs :func:`_report_amx`
    right after its module body has run (before any SGLang module reads the flag)."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "torch":
            return None
        sys.meta_path.remove(self)  # one shot; also keeps find_spec below from recursing
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def exec_then_report(module):
            exec_module(module)
            _report_amx(module)

        spec.loader.exec_module = exec_then_report
        return spec


if "torch" in sys.modules:  # pragma: no cover - only if something imported torch before site
    _report_amx(sys.modules["torch"])
else:
    sys.meta_path.insert(0, _AfterTorchImport())
