"""HMAC-signed, expiring download links for blobs served by the app itself."""

from __future__ import annotations

import hashlib
import hmac
import re
import time
from collections.abc import Callable

from marketplace.errors import Forbidden

# A distinct key for download links, so a signature made here can never be replayed as
# (or collide with) anything else signed with the service secret, such as access tokens.
_KEY_PURPOSE = b"marketplace/blob-download-url/v1"
EXPIRES_PATTERN = r"[1-9][0-9]{0,11}"
SIG_PATTERN = r"[0-9a-f]{64}"
_EXPIRES_RE = re.compile(EXPIRES_PATTERN)
_SIG_RE = re.compile(SIG_PATTERN)


class UrlSigner:
    def __init__(self, secret: str, *, clock: Callable[[], float] = time.time) -> None:
        if not secret:
            raise ValueError("a signing secret is required")
        self._key = hmac.new(secret.encode(), _KEY_PURPOSE, hashlib.sha256).digest()
        self.clock = clock

    def sign(self, key: str, expires: int, filename: str) -> str:
        message = f"{key}|{expires}|{filename}".encode()
        return hmac.new(self._key, message, hashlib.sha256).hexdigest()

    def verify(self, key: str, expires: str | None, filename: str | None, sig: str | None) -> str:
        """The signed filename; raise Forbidden unless the link was signed here and is live."""
        # Parse strictly: `int()` would accept " 1_0 " and let an altered link through.
        if (
            expires is None
            or filename is None
            or sig is None
            or not _EXPIRES_RE.fullmatch(expires)
            or not _SIG_RE.fullmatch(sig)
        ):
            raise _invalid()
        expected = self.sign(key, int(expires), filename)
        if not hmac.compare_digest(expected.encode(), sig.encode()):
            raise _invalid()
        if self.clock() > int(expires):
            raise Forbidden(
                "Download link has expired; request a new one", details={"reason": "expired"}
            )
        return filename


def _invalid() -> Forbidden:
    return Forbidden(
        "Download link is invalid or has been altered", details={"reason": "invalid_signature"}
    )
