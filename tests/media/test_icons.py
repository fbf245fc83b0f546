from __future__ import annotations

import base64
import struct
import zlib

import pytest

from marketplace.errors import AppError, IconInvalid, IconTooLarge
from marketplace.media.icons import ICON_MAX_BYTES, icon_data_url


def png_1x1() -> bytes:
    """A real 1x1 RGBA PNG, written chunk by chunk."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(kind + body)
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", 1, 1, 8, 6, 0, 0, 0)
    pixels = zlib.compress(b"\x00\xff\x00\x00\xff")
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


# 16x16 images from CPython's imghdr test data (Lib/test/imghdrdata/python.{jpg,webp}).
JPEG = base64.b64decode(
    "/9j/4AAQSkZJRgABAQEAAQABAAD/2wBDAAMCAgICAgMCAgIDAwMDBAYEBAQEBAgGBgUGCQgKCgkICQkKDA8MCgsOCwkJ"
    "DRENDg8QEBEQCgwSExIQEw8QEBD/2wBDAQMDAwQDBAgEBAgQCwkLEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQ"
    "EBAQEBAQEBAQEBAQEBAQEBAQEBD/wAARCAAQABADASIAAhEBAxEB/8QAFgABAQEAAAAAAAAAAAAAAAAABwQF/8QAJBAA"
    "AQQBBAICAwAAAAAAAAAAAQIDBAYFBwgSExEiABQJMTL/xAAVAQEBAAAAAAAAAAAAAAAAAAAABv/EACMRAAECBQMFAAAA"
    "AAAAAAAAAAECEQMEBQYhABIxFRZhgeH/2gAMAwEAAhEDEQA/ABSm0mobc8HmExLUlRzzEWPkJWW+ulrsaUVAseUgslSl"
    "H9LKuPryIKuWPZdskzXmm3fX5m2nF4GlVxx/HOpx4ks51+MiU/Iaad7UcUo4tILoS4kqcWkezS0hO/HvuRp0rO6hWnWO"
    "1UisZVuFi4GFeyEpmGepa5S5SWVPuciFKRFLgSrwetnyPIB+Vb4N9mKhQMzo5po9XLdDs9d6ZVix2VEhiL9kuNPxw2gE"
    "KcDQ/rs8AuA8VAe0vdl7VOYn+27flGAUgmITjbhSmCg3BYlyeWDkMolvw4KOp1KM6iCNvngZHwetf//Z"
)
WEBP = base64.b64decode(
    "UklGRqgBAABXRUJQVlA4WAoAAAAQAAAADwAADwAAQUxQSMMAAAABJ6KokSTleucYX+ffKpmImP90cY3gJjDi4Yt3MsjB"
    "EVyDKzDosHgVjnhRNcEIDAJPkqBqsFUZHNa2bUYvTsZ2PLbtd/uvKa4hov9J0f2PkPe6REkkGzolkTTzFG0Ox9PlFiD0"
    "CxS+kOGDtxoynjaCfx0pfk52CPuInrOR75lzRugygtv4zEiy90UwfSD9NheMITJWLaXWayO8XeOlWRXVnIGk2W6WdYoY"
    "MQ+KqixQNPowgt+6a1BSKbUtz+lUFAoBAAAAVlA4IL4AAACQAgCdASoQABAAAwA0JbACdDBPCIUMfAMdCCz96AD+/XSg"
    "/QKbH4r3Q3ycN/bSDK/T/zVo4u6nvclvG/SqxWOuup+XhN9BojvaW+Tv+MvxvX/hr/o/5Qns9LtmX/+qKdl/yWznhuas"
    "l7nkxvSTI4xf3Y85VSB/lU/8Ofj/b9JrA+ifvIOYZm2x1RP/dhfmsf5diuSfR7+z+r/+HR3zEo/+XM/B+vkYw73Pzx+R"
    "OaAB/ZoBSzEs3rzZe6qsAAAA"
)
SVG_NS = 'xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink"'
SVG = f"""<?xml version="1.0" encoding="UTF-8"?>
<svg {SVG_NS} viewBox="0 0 16 16" width="16" height="16">
  <defs><linearGradient id="g"><stop offset="0" stop-color="#09f"/></linearGradient></defs>
  <style>.a {{ fill: url(#g); stroke: #333 }}</style>
  <rect class="a" width="16" height="16" rx="3" style="opacity: .9"/>
  <use href="#g" xlink:href="#g"/>
  <image width="1" height="1" href="data:image/png;base64,{base64.b64encode(png_1x1()).decode()}"/>
</svg>""".encode()


def svg(body: str, *, head: str = "") -> bytes:
    return f"{head}<svg {SVG_NS} viewBox='0 0 16 16'>{body}</svg>".encode()


def payload(url: str) -> bytes:
    return base64.b64decode(url.split(",", 1)[1])


def refused(data: bytes) -> AppError:
    with pytest.raises(IconInvalid) as caught:
        icon_data_url(data)
    assert caught.value.status_code == 400
    assert caught.value.code == "PLUGIN_ICON_INVALID"
    return caught.value


@pytest.mark.parametrize(
    ("data", "media_type"),
    [
        (png_1x1(), "image/png"),
        (JPEG, "image/jpeg"),
        (WEBP, "image/webp"),
        (SVG, "image/svg+xml"),
    ],
)
def test_icon_becomes_a_data_url_of_its_type_with_the_same_bytes(
    data: bytes, media_type: str
) -> None:
    url = icon_data_url(data)

    assert url.startswith(f"data:{media_type};base64,")
    assert payload(url) == data


def test_svg_without_a_namespace_is_accepted() -> None:
    assert icon_data_url(b"<svg><rect width='1' height='1'/></svg>").startswith(
        "data:image/svg+xml;base64,"
    )


def test_svg_with_the_public_svg_doctype_is_accepted() -> None:
    doctype = (
        '<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" '
        '"http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd">'
    )

    assert icon_data_url(svg("<rect/>", head=doctype)).startswith("data:image/svg+xml;")


def test_svg_in_utf16_is_accepted() -> None:
    data = f"<svg {SVG_NS}><rect/></svg>".encode("utf-16")

    assert payload(icon_data_url(data)) == data


def test_type_is_judged_by_content_so_svg_named_png_is_svg() -> None:
    # The function receives only bytes: an upload called icon.png holding SVG is an SVG.
    assert icon_data_url(SVG).startswith("data:image/svg+xml;base64,")


def test_hostile_svg_named_png_is_still_refused() -> None:
    refused(svg("<script>alert(1)</script>"))


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"just some text",
        b"GIF89a\x01\x00\x01\x00\x00\x00\x00;",
        b"\x89PNG\r\n\x1a\n",
        b"RIFF\x00\x00\x00\x00WAVEfmt ",
        b"<html><body>hi</body></html>",
        b"<svg><unclosed></svg>",
        b"\x00\x01\x02\x03" * 64,
        b'{"icon": "png"}',
    ],
    ids=["empty", "text", "gif", "png-magic-only", "wav", "html", "broken-xml", "binary", "json"],
)
def test_content_that_is_not_an_allowed_image_is_refused(data: bytes) -> None:
    assert refused(data).message == "Icon must be a png, jpeg, svg or webp image"


@pytest.mark.parametrize(
    "body",
    [
        "<script>alert(1)</script>",
        "<SCRIPT>alert(1)</SCRIPT>",
        "<g><script xlink:href='#x'/></g>",
    ],
)
def test_svg_with_script_element_is_refused(body: str) -> None:
    refused(svg(body))


@pytest.mark.parametrize(
    "body",
    ["<rect onload='alert(1)'/>", "<rect ONCLICK='x()'/>", "<a onmouseover='x()'><rect/></a>"],
)
def test_svg_with_event_handler_attribute_is_refused(body: str) -> None:
    refused(svg(body))


def test_svg_root_with_onload_is_refused() -> None:
    refused(f'<svg {SVG_NS} onload="alert(1)"/>'.encode())


@pytest.mark.parametrize(
    "href",
    [
        "javascript:alert(1)",
        "JaVaScRiPt:alert(1)",
        " javascript:alert(1)",
        "jav&#x09;ascript:alert(1)",
        "jav&#x0A;ascript:alert(1)",
        "&#106;avascript:alert(1)",
        "java\tscript:alert(1)",
    ],
)
def test_svg_with_javascript_link_is_refused_however_obfuscated(href: str) -> None:
    refused(svg(f'<a href="{href}"><rect/></a>'))
    refused(svg(f'<a xlink:href="{href}"><rect/></a>'))


@pytest.mark.parametrize(
    "body",
    [
        "<image href='https://evil.example/x.png'/>",
        "<image xlink:href='//evil.example/x.png'/>",
        "<use href='other.svg#icon'/>",
        "<image href='file:///etc/passwd'/>",
        "<image href='data:image/svg+xml;base64,PHN2Zy8+'/>",
        "<image href='data:text/html,hi'/>",
        "<a href='http://evil.example'><rect/></a>",
    ],
)
def test_svg_with_external_reference_is_refused(body: str) -> None:
    refused(svg(body))


def test_svg_with_foreign_object_is_refused() -> None:
    refused(
        svg("<foreignObject><div xmlns='http://www.w3.org/1999/xhtml'>hi</div></foreignObject>")
    )


@pytest.mark.parametrize(
    "body",
    [
        "<rect style='fill: url(http://evil.example/x)'/>",
        "<rect style=\"background: url( 'https://evil.example/x' )\"/>",
        "<rect style='fill: url(//evil.example/x)'/>",
        "<rect style='fill: u\\72l(//evil.example/x)'/>",
        "<rect fill='url(https://evil.example/p.svg#g)'/>",
        "<rect filter='url(//evil.example/f.svg#f)'/>",
        "<rect style='background-image: image-set(\"//evil.example/x.png\" 1x)'/>",
    ],
)
def test_svg_with_external_url_in_style_attribute_is_refused(body: str) -> None:
    refused(svg(body))


@pytest.mark.parametrize(
    "css",
    [
        "rect { fill: url(http://evil.example/x) }",
        "@import url(https://evil.example/x.css);",
        "@import 'x.css';",
        "@\\69mport 'x.css';",
        "@font-face { src: url(//evil.example/f.woff) }",
        "rect { background: url(javascript:alert(1)) }",
        "rect { width: expression(alert(1)) }",
        "rect { fill: url(h/**/ttp://evil.example/x) }",
    ],
)
def test_svg_with_external_reference_in_style_element_is_refused(css: str) -> None:
    refused(svg(f"<style>{css}</style>"))


def test_svg_with_external_reference_in_cdata_style_is_refused() -> None:
    refused(svg("<style><![CDATA[ rect { fill: url(http://evil.example/x) } ]]></style>"))


@pytest.mark.parametrize(
    "body",
    [
        "<a><set attributeName='href' to='javascript:alert(1)'/><rect/></a>",
        "<a><animate attributeName='xlink:href' values='https://evil.example'/><rect/></a>",
    ],
)
def test_svg_animating_a_link_is_refused(body: str) -> None:
    refused(svg(body))


def test_svg_with_xhtml_elements_is_refused() -> None:
    refused(svg("<h:iframe xmlns:h='http://www.w3.org/1999/xhtml' src='#x'/>"))


def test_svg_with_external_entity_xxe_is_refused() -> None:
    head = '<?xml version="1.0"?><!DOCTYPE svg [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>'
    refused(svg("<text>&xxe;</text>", head=head))


def test_svg_with_billion_laughs_is_refused() -> None:
    head = (
        '<!DOCTYPE svg [<!ENTITY a "lol"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">'
        '<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;"><!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;">]>'
    )
    refused(svg("<text>&d;</text>", head=head))


def test_svg_with_dtd_default_event_attribute_is_refused() -> None:
    head = '<!DOCTYPE svg [<!ATTLIST svg onload CDATA "alert(1)">]>'
    refused(svg("<rect/>", head=head))


def test_svg_with_external_stylesheet_instruction_is_refused() -> None:
    refused(svg("<rect/>", head='<?xml-stylesheet href="https://evil.example/x.css"?>'))


def test_icon_of_exactly_the_limit_is_accepted() -> None:
    data = png_1x1()
    data += b"\x00" * (ICON_MAX_BYTES - len(data))

    assert icon_data_url(data).startswith("data:image/png;base64,")


def test_icon_over_the_limit_is_refused_as_too_large() -> None:
    data = png_1x1() + b"\x00" * ICON_MAX_BYTES

    with pytest.raises(IconTooLarge) as caught:
        icon_data_url(data)

    assert caught.value.status_code == 413
    assert caught.value.code == "PLUGIN_ICON_TOO_LARGE"
    assert caught.value.message == "Icon is larger than 256 KB"


def test_icon_limit_can_be_lowered_by_the_caller() -> None:
    with pytest.raises(IconTooLarge) as caught:
        icon_data_url(JPEG, max_bytes=100)

    assert caught.value.details == {"maxBytes": 100, "limit": 100, "size": len(JPEG)}
