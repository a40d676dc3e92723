"""mambaconsole: a terminal debugging console for live SGLang inference servers.

Layers go one way: ``node`` (how we reach the GPU node) -> ``sglang`` (pure knowledge of
SGLang's formats) -> ``state`` -> ``ui``. ``node``, ``agent`` and ``sglang`` never import Textual.
"""

__version__ = "0.1.0"
