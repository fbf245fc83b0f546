"""Icons as the service stores them: the shared rules' check (`marketplace_rules.icons`, which
the publishing tool runs too) with its refusals turned into the service's errors."""

from __future__ import annotations

from marketplace.errors import IconInvalid, IconTooLarge
from marketplace_rules import icons
from marketplace_rules.limits import ICON_MAX_BYTES

__all__ = ["ICON_MAX_BYTES", "icon_data_url"]


def icon_data_url(data: bytes, *, max_bytes: int = ICON_MAX_BYTES) -> str:
    """A `data:image/...;base64,` URL for a png, jpeg, webp or safe svg icon.

    Raises IconTooLarge over `max_bytes` (equal passes) and IconInvalid for anything else.
    """
    try:
        return icons.icon_data_url(data, max_bytes=max_bytes)
    except icons.IconRefused as exc:
        error = IconTooLarge if exc.too_large else IconInvalid
        raise error(exc.message, details=dict(exc.details)) from None
