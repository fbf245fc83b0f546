"""Short-lived JWT access tokens and opaque, hashed, rotating refresh tokens."""

from __future__ import annotations

import hashlib
import secrets
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import jwt

ALGORITHM = "HS256"
ISSUER = "marketplace"


@dataclass(frozen=True)
class AccessClaims:
    user_id: str
    expires_at: datetime


def create_access_token(user_id: str, secret: str, minutes: int) -> tuple[str, int]:
    now = datetime.now(UTC)
    payload = {
        "sub": user_id,
        "iat": now,
        "exp": now + timedelta(minutes=minutes),
        "iss": ISSUER,
        "typ": "access",
        "jti": uuid.uuid4().hex,
    }
    return jwt.encode(payload, secret, algorithm=ALGORITHM), minutes * 60


def decode_access_token(token: str, secret: str) -> AccessClaims | None:
    """None for anything not a valid, unexpired access token of ours (alg none included)."""
    try:
        payload = jwt.decode(
            token,
            secret,
            algorithms=[ALGORITHM],
            issuer=ISSUER,
            options={"require": ["exp", "iat", "sub", "iss"]},
        )
    except jwt.PyJWTError:
        return None
    if payload.get("typ") != "access" or not isinstance(payload.get("sub"), str):
        return None
    return AccessClaims(
        user_id=payload["sub"], expires_at=datetime.fromtimestamp(payload["exp"], UTC)
    )


def new_refresh_token() -> str:
    return secrets.token_urlsafe(32)


def hash_refresh_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()
