"""TEST-ONLY import stub for ``torchvision``, used solely by mambaconsole's tests through
``PYTHONPATH`` in the CPU SGLang test venvs (tests/sglang_venvs.sh). Never ship or install it.

Why: importing ``sglang.srt.server_args`` imports torchvision (0.5.11
``sglang/srt/utils/common.py``: ``from torchvision.io import decode_jpeg``; every version:
``sglang/srt/multimodal/internvl_utils.py``: ``import torchvision.transforms as T``), but PyPI's
torchvision wheels are CUDA builds that fail against CPU torch (``operator torchvision::nms does
not exist``). Argument resolution never calls torchvision, so an inert stand-in is enough.

Any ``torchvision.*`` submodule can be imported; any attribute of it is a placeholder class;
attributes of a placeholder are placeholders; calling or instantiating one raises RuntimeError.
"""

import importlib.abc
import importlib.machinery
import sys
import types

__version__ = "0.0.0+mambaconsole.teststub"


class _PlaceholderMeta(type):
    def __getattr__(cls, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _placeholder(name, cls.__module__)

    def __call__(cls, *args, **kwargs):
        raise RuntimeError(f"torchvision test stub: {cls.__module__}.{cls.__name__} is not usable")


def _placeholder(name, module):
    return _PlaceholderMeta(name, (), {"__module__": module})


class _StubModule(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        value = _placeholder(name, self.__name__)
        setattr(self, name, value)
        return value


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path=None, target=None):
        if fullname.startswith(__name__ + "."):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        module = _StubModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module):
        pass


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    value = _placeholder(name, __name__)
    globals()[name] = value
    return value


if not any(isinstance(f, _Finder) for f in sys.meta_path):
    sys.meta_path.insert(0, _Finder())
