"""The Jinja environment: autoescaped everywhere, strict about undefined names.

One set of templates: the layout, the login and error pages and the shared macros live
here; each site's own pages live in its package and are found under the site's key
(`console/queue.html`), so both sites share one look without a copy of it.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

from jinja2 import ChoiceLoader, Environment, PackageLoader, PrefixLoader, StrictUndefined

from marketplace.web.highlight import quoted_parts

# Each site's package of pages, by the site's key (the packages are entry points above this
# one, so they are named, not imported).
SITE_TEMPLATES = {
    "console": "marketplace.admin_console",
    "portal": "marketplace.portal",
    "public": "marketplace.public_pages",
}

# Icons the page may show as an image: raster or SVG data URLs only. An SVG shown through
# <img> runs no script and loads nothing (browsers' secure static mode); anything else
# (an icon name, a URL) is shown as text.
_ICON_DATA_URL = re.compile(r"^data:image/(png|jpeg|webp|svg\+xml);base64,[A-Za-z0-9+/]+={0,2}$")


def age(moment: datetime | None, now: datetime | None = None) -> str:
    """How long ago, in the largest whole unit: "just now", "12 min", "3 h", "2 d"."""
    if moment is None:
        return "-"
    seconds = int(((now or datetime.now(UTC)) - moment).total_seconds())
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{seconds // 60} min"
    if seconds < 86400:
        return f"{seconds // 3600} h"
    return f"{seconds // 86400} d"


def ago(moment: datetime | None) -> str:
    """ "3 h ago", or "just now"."""
    shown = age(moment)
    return shown if shown in ("just now", "-") else f"{shown} ago"


def when(moment: datetime | None) -> str:
    if moment is None:
        return "-"
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def size(value: int | None) -> str:
    """Binary units, as the limits are stated (CONTRACT: 100 MB = 100 MiB)."""
    if value is None:
        return "-"
    amount = float(value)
    for unit in ("B", "KiB", "MiB"):
        if amount < 1024 or unit == "MiB":
            return f"{int(amount)} {unit}" if unit == "B" else f"{amount:.1f} {unit}"
        amount /= 1024
    return f"{amount:.1f} GiB"  # pragma: no cover - the loop always returns


def pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)


def icon_src(value: str | None) -> str | None:
    """The icon as an <img> source when it is an image data URL; None otherwise."""
    if value and len(value) <= 512 * 1024 and _ICON_DATA_URL.match(value):
        return value
    return None


def _environment() -> Environment:
    env = Environment(
        loader=ChoiceLoader(
            [
                PackageLoader("marketplace.web", "templates"),
                PrefixLoader(
                    {
                        key: PackageLoader(package, "templates")
                        for key, package in SITE_TEMPLATES.items()
                    }
                ),
            ]
        ),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(age=age, ago=ago, when=when, size=size, pretty_json=pretty_json)
    env.globals.update(icon_src=icon_src, quoted_parts=quoted_parts)
    return env


ENV = _environment()


def render(site_key: str, template: str, context: dict[str, Any]) -> str:
    """The site's own page of that name, else the shared one."""
    return ENV.select_template([f"{site_key}/{template}", template]).render(context)
