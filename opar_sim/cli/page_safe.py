"""What keeps the report a page of data: its SVGs redrawn to a safe subset, its JSON inert, a CSP.

A shared run directory is data, never code (issue 31).

``inline_svg`` parses the file with expat (entity declarations refused) and writes it
out again with the SVG elements and attributes a matplotlib figure uses: no ``script``,
``foreignObject``, ``a``, animation or ``on*`` attribute; links only to a local ``#id``
or an embedded raster image; ``url()`` only as ``url(#id)``; no style sheet but
matplotlib's one rule.  The report inlines every figure through it, reused or redrawn.
``json_script`` embeds data with ``<``, ``>``, ``&``, U+2028 and U+2029 escaped, and
``content_security_policy`` allows the page's one script (by its hash) and nothing else.
"""

from __future__ import annotations

import base64
import hashlib
import html
import re
import xml.parsers.expat
from typing import Any

import orjson

SVG_NS = "http://www.w3.org/2000/svg"
XLINK_NS = "http://www.w3.org/1999/xlink"
XML_NS = "http://www.w3.org/XML/1998/namespace"

# the drawing elements matplotlib's SVG backend writes (and a few plain shapes): nothing
# that runs script (script, set, animate*, handlers), embeds a document (foreignObject,
# iframe) or navigates (a); any other element is left out with everything inside it
_SVG_ELEMENTS = frozenset(
    {
        "svg",
        "g",
        "defs",
        "style",
        "path",
        "use",
        "clipPath",
        "rect",
        "image",
        "line",
        "polyline",
        "polygon",
        "circle",
        "ellipse",
        "text",
        "tspan",
        "title",
        "desc",
        "symbol",
        "pattern",
        "linearGradient",
        "radialGradient",
        "stop",
        "mask",
        "marker",
    }
)
# attributes in no namespace that only draw: presentation, geometry, ids
_SVG_ATTRIBUTES = frozenset(
    {
        "id",
        "d",
        "transform",
        "style",
        "clip-path",
        "clip-rule",
        "fill-rule",
        "x",
        "y",
        "x1",
        "y1",
        "x2",
        "y2",
        "cx",
        "cy",
        "r",
        "rx",
        "ry",
        "width",
        "height",
        "viewBox",
        "version",
        "points",
        "fill",
        "fill-opacity",
        "stroke",
        "stroke-width",
        "stroke-opacity",
        "stroke-dasharray",
        "stroke-dashoffset",
        "stroke-linecap",
        "stroke-linejoin",
        "stroke-miterlimit",
        "opacity",
        "font-family",
        "font-size",
        "font-style",
        "font-weight",
        "text-anchor",
        "dominant-baseline",
        "letter-spacing",
        "preserveAspectRatio",
        "patternUnits",
        "patternContentUnits",
        "patternTransform",
        "gradientUnits",
        "gradientTransform",
        "offset",
        "stop-color",
        "stop-opacity",
        "mask",
        "maskUnits",
        "clipPathUnits",
        "image-rendering",
        "visibility",
        "display",
        "marker-start",
        "marker-mid",
        "marker-end",
        "markerWidth",
        "markerHeight",
        "refX",
        "refY",
        "orient",
        "type",
    }
)
_LOCAL_URL = re.compile(r"url\(\s*#([^\s()'\"\\]+)\s*\)")
# what a value may hold besides local url(#id) references: no parenthesis (url(),
# image-set(), expression()), no backslash (a CSS escape), no "@", no "/" (no address)
_PLAIN_VALUE = re.compile(r"[A-Za-z0-9\s\-+:;.,#%'\"_]*")
_TRANSFORM = re.compile(r"[A-Za-z0-9\s\-+.,()]*")
_STYLE_SHEET = re.compile(r"\s*\*\s*\{[A-Za-z0-9\s\-:;.#%]*\}\s*")  # matplotlib's one rule
_DATA_IMAGE = re.compile(r"data:image/(png|jpeg|gif);base64,[A-Za-z0-9+/=\s]*")


def _svg_value(name: str, value: str, prefix: str) -> str | None:
    """An attribute's value with its local references prefixed, or None to leave it out."""
    if name == "transform" or name.endswith("Transform"):
        return value if _TRANSFORM.fullmatch(value) else None
    if not _PLAIN_VALUE.fullmatch(_LOCAL_URL.sub("", value)):
        return None
    return _LOCAL_URL.sub(lambda m: f"url(#{prefix}-{m.group(1)})", value)


def _svg_href(element: str, value: str, prefix: str) -> str | None:
    """A link's target: a local ``#id`` (prefixed), or an image's embedded raster pixels."""
    if value.startswith("#") and len(value) > 1 and not any(c.isspace() for c in value):
        return f"#{prefix}-{value[1:]}"
    if element == "image" and _DATA_IMAGE.fullmatch(value):
        return value
    return None


class _SvgWriter:
    """Writes an SVG anew from expat's events, keeping only what ``inline_svg`` allows."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.out: list[str] = []
        self.stack: list[str | None] = []  # open elements; None for one left out
        self.pending = False  # a start tag written without its ">" (it may close as "/>")
        self.seen = 0  # elements met
        self.sheet: list[str] | None = None  # the text of the open <style> element

    def _close_start(self) -> None:
        if self.pending:
            self.out.append(">")
            self.pending = False

    def _attributes(self, local: str, attrs: dict[str, str], root: bool) -> list[tuple[str, str]]:
        kept: list[tuple[str, str]] = []
        for key, value in attrs.items():
            ns, _, attr = key.rpartition(" ")
            if root and attr in ("width", "height"):
                continue  # the page sets the width
            if attr == "href" and ns in ("", XLINK_NS):
                target = _svg_href(local, value, self.prefix)
                if target is not None:
                    kept.append(("xlink:href", target))
            elif ns == XML_NS and attr == "space" and value in ("default", "preserve"):
                kept.append(("xml:space", value))
            elif ns == "" and attr == "id":
                kept.append(("id", f"{self.prefix}-{value}"))
            elif ns == "" and attr in _SVG_ATTRIBUTES:
                clean = _svg_value(attr, value, self.prefix)
                if clean is not None:
                    kept.append((attr, clean))
        if root:
            head = [("class", "fig"), ("data-fig", self.prefix)]
            kept = [*head, ("xmlns", SVG_NS), ("xmlns:xlink", XLINK_NS), *kept]
        return kept

    def start(self, name: str, attrs: dict[str, str]) -> None:
        ns, _, local = name.rpartition(" ")
        root = self.seen == 0
        self.seen += 1
        if root and (ns != SVG_NS or local != "svg"):
            raise ValueError("not an SVG document")
        inside_left_out = bool(self.stack) and self.stack[-1] in (None, "style")
        if inside_left_out or ns != SVG_NS or local not in _SVG_ELEMENTS:
            self.stack.append(None)  # and everything inside it
            return
        self.stack.append(local)
        if local == "style":  # written at its end, when its text is known
            self.sheet = []
            return
        self._close_start()
        kept = self._attributes(local, attrs, root)
        self.out.append(f"<{local}" + "".join(f' {k}="{html.escape(v)}"' for k, v in kept))
        self.pending = True

    def end(self, name: str) -> None:
        local = self.stack.pop()
        if local is None:
            return
        if local == "style":
            text = "".join(self.sheet or [])
            self.sheet = None
            if _STYLE_SHEET.fullmatch(text):  # a style sheet reaches the whole page
                self._close_start()
                self.out.append(f'<style type="text/css">{html.escape(text, quote=False)}</style>')
        elif self.pending:
            self.out.append("/>")
            self.pending = False
        else:
            self.out.append(f"</{local}>")

    def data(self, chunk: str) -> None:
        if not self.stack or self.stack[-1] is None:
            return
        if self.stack[-1] == "style":
            assert self.sheet is not None
            self.sheet.append(chunk)
            return
        self._close_start()
        self.out.append(html.escape(chunk, quote=False))


def _refuse_entities(*_: object) -> int:
    """The expat handler for an entity declaration or a reference it cannot resolve: refused."""
    raise ValueError("an SVG with an entity declaration or reference")


def inline_svg(text: str, prefix: str) -> str:
    """An SVG's text made safe to embed: drawing elements only, ids prefixed, width from the page.

    The SVG is parsed (expat, no entity declarations) and written anew with
    the elements and attributes that only draw (``_SVG_ELEMENTS``,
    ``_SVG_ATTRIBUTES``): no script, no event handler, no foreignObject, no
    link, no reference outside the figure but an image's ``data:image/png``
    pixels, no style sheet but matplotlib's one rule.  Text and attribute
    values are escaped.  matplotlib names clip paths and glyphs with ids that
    repeat across figures; the prefix keeps each figure's references to its own.

    Args:
        text: The SVG document (as ``plot`` writes it, or anything else).
        prefix: The figure's stem (``[A-Za-z0-9_]``), prefixed to every id.

    Returns:
        One ``<svg class="fig" data-fig="PREFIX">`` element.

    Raises:
        ValueError: When the text is not well-formed XML with an SVG root.
    """
    if not re.fullmatch(r"[A-Za-z0-9_]+", prefix):
        raise ValueError(f"not a figure stem: {prefix!r}")
    writer = _SvgWriter(prefix)
    parser = xml.parsers.expat.ParserCreate(namespace_separator=" ")
    parser.SetParamEntityParsing(xml.parsers.expat.XML_PARAM_ENTITY_PARSING_NEVER)
    parser.EntityDeclHandler = _refuse_entities
    parser.SkippedEntityHandler = _refuse_entities
    parser.ExternalEntityRefHandler = _refuse_entities
    parser.StartElementHandler = writer.start
    parser.EndElementHandler = writer.end
    parser.CharacterDataHandler = writer.data
    try:
        parser.Parse(text.encode("utf-8"), True)
    except xml.parsers.expat.ExpatError as exc:
        raise ValueError(f"not a well-formed SVG: {exc}") from None
    if writer.seen == 0:
        raise ValueError("not an SVG document")
    return "".join(writer.out)


_JSON_ESCAPES = {
    ord("<"): "\\u003c",
    ord(">"): "\\u003e",
    ord("&"): "\\u0026",
    0x2028: "\\u2028",
    0x2029: "\\u2029",
}


def json_script(element_id: str, data: Any) -> str:
    """``data`` as a ``<script type="application/json">`` block the page reads with JSON.parse."""
    text = orjson.dumps(data).decode().translate(_JSON_ESCAPES)
    return f'<script type="application/json" id="{html.escape(element_id)}">{text}</script>'


def content_security_policy(script: str) -> str:
    """The page's policy: only ``script`` (the text of its one script element) runs.

    No inline event handler, no ``javascript:`` address, no script, object,
    frame, font or style sheet from anywhere; images only as ``data:`` (the
    raster pixels inside the SVG figures); inline styles stay (the figures are
    drawn with them).
    """
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode()
    return (
        f"default-src 'none'; script-src 'sha256-{digest}'; style-src 'unsafe-inline'; "
        "img-src data:; object-src 'none'; base-uri 'none'; form-action 'none'"
    )
