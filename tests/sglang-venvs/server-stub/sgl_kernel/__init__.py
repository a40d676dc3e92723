"""TEST-ONLY stand-in for ``sgl_kernel``, put on ``PYTHONPATH`` of the real SGLang 0.5.23 servers
the tests launch (tests/fixtures/real_sglang.py). Never ship or install it.

Why it must exist: PyPI carries only the CUDA build of ``sgl_kernel`` (no CPU build, no source
package), yet SGLang 0.5.23 imports it on the CPU path before serving anything; e.g.
``sglang/srt/utils/common.py:356`` (``_is_intel_amx_backend_available``: ``import sgl_kernel``) and
``sglang/srt/layers/moe/topk.py:233`` / ``sglang/srt/layers/layernorm.py:102`` (module-level
``from sgl_kernel import ...`` behind platform checks).

Any ``sgl_kernel.<name>`` is a function that records its call and raises ``NotImplementedError``.
Submodules (``sgl_kernel.scalar_type``, ``.kvcacheio``, ...) are not there, so SGLang's own
``except ImportError`` fallbacks apply (e.g. ``sglang/srt/layers/quantization/utils.py:27``). No
``torch.ops.sgl_kernel`` op is registered, so ``hasattr(torch.ops.sgl_kernel,
"convert_weight_packed")`` is False (``sglang/srt/utils/common.py:358``) and SGLang keeps its
plain-torch CPU path (``cpu_has_amx_support()`` False). The plain Qwen3 server runs so, and a test
asserts nothing was called.

The hybrid Qwen3-Next needs more: its linear-attention layers run only on SGLang's AMX CPU path
(``cpu_has_amx_support()``), which calls about 20 CPU entry points. Plain-torch stand-ins for
them live in ``tests/sglang-venvs/server-stub-cpu`` (``sgl_kernel/cpu_ops.py``: the
``torch.ops.sgl_kernel`` operators; ``sgl_kernel/mamba.py``; ``sitecustomize.py``: SGLang sees
AMX), a folder on the hybrid servers' ``PYTHONPATH`` only. This package's ``__path__`` spans
every ``sgl_kernel`` folder on ``sys.path`` (``pkgutil.extend_path``), and it imports
``sgl_kernel.cpu_ops`` when that folder is there; without it, nothing is registered.

``MAMBACONSOLE_SGL_KERNEL_CALLS=FILE``: each entry point appends its name to FILE on its first
call in a process (one line per name and process).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import pkgutil

__version__ = "0.0.0+mambaconsole.standin"

# submodules may come from the other stand-in folders on PYTHONPATH (server-stub-cpu)
__path__ = pkgutil.extend_path(__path__, __name__)

_seen: set[str] = set()


def record_call(name: str) -> None:
    """Append ``name`` to ``$MAMBACONSOLE_SGL_KERNEL_CALLS`` the first time it is called here."""
    if name in _seen:
        return
    _seen.add(name)
    path = os.environ.get("MAMBACONSOLE_SGL_KERNEL_CALLS")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(f"{name}\n")


def _missing(qualname: str):
    def entry_point(*args, **kwargs):
        record_call(qualname)
        raise NotImplementedError(f"sgl_kernel test stand-in: {qualname} has no CPU stand-in")

    entry_point.__name__ = entry_point.__qualname__ = qualname.rsplit(".", 1)[-1]
    entry_point.__module__ = qualname.rsplit(".", 1)[0]
    return entry_point


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    value = _missing(f"{__name__}.{name}")
    globals()[name] = value
    return value


if importlib.util.find_spec(f"{__name__}.cpu_ops") is not None:  # server-stub-cpu on PYTHONPATH
    importlib.import_module(f"{__name__}.cpu_ops")
