"""Moved to :mod:`mambaconsole.session.feed` (headless). This name is the same module object,
for code written before the move."""

import sys

from mambaconsole.session import feed as _feed

sys.modules[__name__] = _feed
