"""SVG screenshots that render the same outside a browser.

Textual's export (Rich's ``CONSOLE_SVG_FORMAT``, Textual 8.2) draws each run of one style as an
SVG ``<text>`` at its cell's x, with spaces written as ``&#160;``, in ``font-family: Fira Code,
monospace`` fetched from a CDN. librsvg (``rsvg-convert`` 2.54) drops the spaces that start a
``<text>`` under SVG's default whitespace handling, so words glue (``3.23mean``), and without
network it falls back to whatever ``monospace`` is. :func:`portable_svg` sets
``xml:space="preserve"`` on the root element and names DejaVu Sans Mono (which has the
box-drawing and block glyphs the panes draw) before the generic ``monospace``.
"""

from __future__ import annotations

import re

#: the font the terminal text falls back to before the generic family (box drawing, blocks, braille)
FALLBACK_FONT = "DejaVu Sans Mono"

_ROOT = re.compile(r"<svg(?![^>]*\bxml:space=)")
_FAMILY = re.compile(r"(font-family:\s*Fira Code,)(\s*monospace)")


def portable_svg(svg: str) -> str:
    """``svg`` (a Textual screenshot) with ``xml:space="preserve"`` on its root element and
    :data:`FALLBACK_FONT` named before ``monospace``; unchanged where it already has them or
    where the export's shape differs (another Textual version): never an error."""
    svg = _ROOT.sub('<svg xml:space="preserve"', svg, count=1)
    if FALLBACK_FONT not in svg:
        svg = _FAMILY.sub(rf"\1 {FALLBACK_FONT},\2", svg)
    return svg
