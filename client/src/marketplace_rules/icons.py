"""Icons: judged by their bytes, never by file name or Content-Type, and kept as data URLs.

Raster images are recognised by their signature. An SVG must parse as XML (with defusedxml:
no entity declarations, no external entities) and is refused when it could run script or
load anything from outside itself, because clients may render it inline.
"""

from __future__ import annotations

import base64
import re
import xml.etree.ElementTree as ET
from typing import NoReturn

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import DefusedXMLParser

from marketplace_rules.limits import ICON_MAX_BYTES, KIB

__all__ = ["ICON_MAX_BYTES", "IconRefused", "icon_data_url"]
DEFAULT_REFUSAL = "Icon must be a png, jpeg, svg or webp image"


class IconRefused(Exception):
    """An icon the service would refuse: too large, or not a safe png/jpeg/webp/svg."""

    def __init__(
        self,
        message: str = DEFAULT_REFUSAL,
        *,
        too_large: bool = False,
        details: dict[str, object] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.too_large = too_large
        self.details = details or {}


SVG_NS = "http://www.w3.org/2000/svg"

# Elements that run script, embed other documents or pull in foreign markup.
_FORBIDDEN_ELEMENTS = frozenset(
    {
        "script",
        "foreignobject",
        "iframe",
        "frame",
        "embed",
        "object",
        "applet",
        "handler",
        "listener",
        "link",
        "meta",
        "base",
    }
)
_FORBIDDEN_NAMESPACES = frozenset({"http://www.w3.org/1999/xhtml"})
_ANIMATION_ELEMENTS = frozenset({"set", "animate", "animatemotion", "animatetransform"})
_REFERENCE_ATTRIBUTES = frozenset({"href", "src"})
# Embedded raster images are the only data: URLs an icon may carry.
_RASTER_DATA_URL = re.compile(r"data:image/(?:png|jpeg|jpg|gif|webp)[;,]")
# The closing parenthesis is optional: CSS accepts an unterminated url( at the end.
_URL_FUNCTION = re.compile(r"url\(\s*(?:\"([^\"]*)\"|'([^']*)'|([^)]*))\s*(?:\)|$)", re.IGNORECASE)
_CSS_ESCAPE = re.compile(r"\\(?:([0-9a-fA-F]{1,6})\s?|(.))", re.DOTALL)
_CSS_COMMENT = re.compile(r"/\*.*?(?:\*/|$)", re.DOTALL)
# URL parsers drop ASCII whitespace and controls anywhere in a scheme: "jav\tascript:".
_URL_NOISE = re.compile(r"[\x00-\x20\x7f]+")
# CSS that fetches, runs script (old IE and Firefox) or names images by bare string.
_CSS_FORBIDDEN = (
    "@import",
    "javascript:",
    "vbscript:",
    "expression(",
    "behavior:",
    "-moz-binding",
    "image-set(",
    "image(",
    "cross-fade(",
    "element(",
    "src(",
)


def icon_data_url(data: bytes, *, max_bytes: int = ICON_MAX_BYTES) -> str:
    """A `data:image/...;base64,` URL for a png, jpeg, webp or safe svg icon.

    Raises IconRefused: `too_large` over `max_bytes` (equal passes), else not a safe image.
    """
    if len(data) > max_bytes:
        raise IconRefused(
            f"Icon is larger than {max_bytes // KIB} KB",
            too_large=True,
            details={"maxBytes": max_bytes, "limit": max_bytes, "size": len(data)},
        )
    media_type = _raster_type(data) or _svg_type(data)
    return f"data:{media_type};base64,{base64.b64encode(data).decode('ascii')}"


def _raster_type(data: bytes) -> str | None:
    if data.startswith(b"\x89PNG\r\n\x1a\n") and data[12:16] == b"IHDR":
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP" and data[12:15] == b"VP8":
        return "image/webp"
    return None


def _refuse(reason: str) -> NoReturn:
    raise IconRefused(f"SVG icon refused: {reason}", details={"reason": reason})


class _SvgParser(DefusedXMLParser):
    """defusedxml's parser, also refusing processing instructions and DTD internal subsets.

    A DOCTYPE naming the public SVG DTD is common in exported files and harmless (expat never
    fetches it); an internal subset could declare default attributes such as `onload`.
    """

    def __init__(self) -> None:
        super().__init__(target=ET.TreeBuilder(), forbid_entities=True, forbid_external=True)
        self.parser.StartDoctypeDeclHandler = self._on_doctype
        self.parser.ProcessingInstructionHandler = self._on_processing_instruction

    def _on_doctype(
        self, name: str, sysid: str | None, pubid: str | None, has_internal_subset: bool
    ) -> None:
        if has_internal_subset:
            _refuse("DOCTYPE with an internal subset")

    def _on_processing_instruction(self, target: str, data: str) -> None:
        _refuse(f"processing instruction <?{target}?>")


def _svg_type(data: bytes) -> str:
    parser = _SvgParser()
    try:
        parser.feed(data)
        root = parser.close()
    except IconRefused:
        raise
    except DefusedXmlException:
        _refuse("entity declarations and external entities are not allowed")
    except (ET.ParseError, ValueError, UnicodeError):
        raise IconRefused() from None
    if root.tag not in (f"{{{SVG_NS}}}svg", "svg"):
        raise IconRefused()
    _check_svg_tree(root)
    return "image/svg+xml"


def _split(tag: str) -> tuple[str, str]:
    """(namespace, lowercased local name) of an element or attribute name."""
    if tag.startswith("{"):
        namespace, _, local = tag[1:].partition("}")
        return namespace, local.lower()
    return "", tag.lower()


def _check_svg_tree(root: ET.Element) -> None:
    for element in root.iter():
        if not isinstance(element.tag, str):  # comments
            continue
        namespace, name = _split(element.tag)
        if name in _FORBIDDEN_ELEMENTS or namespace in _FORBIDDEN_NAMESPACES:
            _refuse(f"<{name}> element")
        if name == "style":
            _check_css(element.text or "")
        for attribute, value in element.attrib.items():
            _check_attribute(name, _split(attribute)[1], value)


def _check_attribute(element: str, name: str, value: str) -> None:
    if name.startswith("on"):
        _refuse(f"event handler attribute {name}")
    compact = _URL_NOISE.sub("", value).lower()
    if "javascript:" in compact or "vbscript:" in compact:
        _refuse(f"script URL in {name}")
    if name in _REFERENCE_ATTRIBUTES and compact and not _is_local(compact):
        _refuse(f"external reference in {name}")
    if element in _ANIMATION_ELEMENTS and name == "attributename":
        # <set attributeName="href" to="..."> would swap in a link after these checks.
        if compact.rpartition(":")[2] in _REFERENCE_ATTRIBUTES:
            _refuse("animation of a link attribute")
    if name == "style":
        _check_css(value)
    else:
        # Presentation attributes (fill, filter, mask, clip-path, ...) take url() too.
        _check_urls(_decode_css(value))


def _check_css(text: str) -> None:
    css = _decode_css(text)
    compact = _URL_NOISE.sub("", css).lower()
    for needle in _CSS_FORBIDDEN:
        if needle in compact:
            _refuse(f"{needle} in style")
    if "://" in compact:
        _refuse("external URL in style")
    _check_urls(css)


def _check_urls(css: str) -> None:
    for match in _URL_FUNCTION.finditer(css):
        target = next(group for group in match.groups() if group is not None)
        if not _is_local(_URL_NOISE.sub("", target).lower()):
            _refuse("external url() reference")


def _is_local(url: str) -> bool:
    return url.startswith("#") or _RASTER_DATA_URL.match(url) is not None


def _decode_css(text: str) -> str:
    """Undo CSS comments and backslash escapes, so `@\\69mport` reads as `@import`."""

    def unescape(match: re.Match[str]) -> str:
        hex_digits, char = match.groups()
        if hex_digits is not None:
            code = int(hex_digits, 16)
            return chr(code) if 0 < code <= 0x10FFFF else "\ufffd"
        return "" if char == "\n" else char

    return _CSS_ESCAPE.sub(unescape, _CSS_COMMENT.sub("", text))
