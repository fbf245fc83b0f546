"""Argon2id password hashing, run in a worker thread (it is deliberately slow)."""

from __future__ import annotations

import anyio.to_thread
from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

_hasher = PasswordHasher()  # argon2-cffi defaults are Argon2id with RFC 9106 parameters

# Verified against when the e-mail is unknown, so both failures cost the same time.
_DUMMY_HASH = _hasher.hash("not-a-real-password-used-for-timing")


async def hash_password(password: str) -> str:
    return await anyio.to_thread.run_sync(_hasher.hash, password)


def _verify(password_hash: str, password: str) -> bool:
    try:
        return _hasher.verify(password_hash, password)
    except (VerifyMismatchError, VerificationError, InvalidHashError, UnicodeEncodeError):
        return False


async def verify_password(password_hash: str | None, password: str) -> bool:
    if password_hash is None:
        await anyio.to_thread.run_sync(_verify, _DUMMY_HASH, password)
        return False
    return await anyio.to_thread.run_sync(_verify, password_hash, password)
