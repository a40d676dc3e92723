"""Moved to :mod:`mambaconsole.session.settings` (headless: commands and the demo read settings
without importing ``ui/``). This name is the same module object, for code written before the
move."""

import sys

from mambaconsole.session import settings as _settings

sys.modules[__name__] = _settings
