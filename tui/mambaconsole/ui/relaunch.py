"""Moved to :mod:`mambaconsole.session.relaunch` (headless). This name is the same module
object, for code written before the move."""

import sys

from mambaconsole.session import relaunch as _relaunch

sys.modules[__name__] = _relaunch
