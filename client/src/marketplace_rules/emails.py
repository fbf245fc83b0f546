"""The one rule for e-mail addresses: registration, identity contacts, `user create` and
the OpenAPI document's pattern all come from here, so what the document allows the service
accepts, and what it refuses the service refuses.

WHATWG's rule for `<input type="email">` (a dot-atom local part of RFC 5322's printable
ASCII, host labels of letters, digits and inner hyphens), with two more things a
marketplace needs of an address it writes to: at least two labels, and a last label that
starts with a letter (no bare host, no IP-like or numeric top-level domain). Internationalised
domains are written as their `xn--` labels. No lookaheads, so a schema-driven generator can
produce examples from the pattern directly.
"""

from __future__ import annotations

import re
from typing import Final

EMAIL_MAX_LENGTH: Final = 254  # RFC 5321's path limit, less its angle brackets

_ATEXT = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]"
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_LAST_LABEL = r"[A-Za-z](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
EMAIL_PATTERN: Final = rf"^{_ATEXT}+(?:\.{_ATEXT}+)*@(?:{_LABEL}\.)+{_LAST_LABEL}$"
_EMAIL: Final = re.compile(EMAIL_PATTERN)


def email_problem(value: str) -> str | None:
    """Why `value` is not an address the service accepts, or None when it is."""
    if len(value) > EMAIL_MAX_LENGTH:
        return f"an e-mail address has at most {EMAIL_MAX_LENGTH} characters"
    # fullmatch: `$` alone would also match before a final newline.
    if _EMAIL.fullmatch(value) is None:
        return "not a valid e-mail address (name@example.com)"
    return None


def openapi_email_schema() -> dict[str, object]:
    """The JSON Schema keywords that say exactly what `email_problem` accepts."""
    return {"format": "email", "pattern": EMAIL_PATTERN, "maxLength": EMAIL_MAX_LENGTH}
