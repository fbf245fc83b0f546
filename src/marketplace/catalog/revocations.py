"""`GET /api/v1/plugins/revocations` (CONTRACT 11): the signed list of withdrawn versions.

Public: no token needed, a valid one changes nothing (an invalid one is still 401). Its own
router, included before the catalogue's, with a static path, so no `/{...}` route of the
`/api/v1/plugins` prefix can read "revocations" as a plugin reference.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request

from marketplace.auth.deps import OptionalUser
from marketplace.catalog.http import NOT_MODIFIED, conditional_response
from marketplace.db import DbSession
from marketplace.kit.routing import api_router
from marketplace.kit.schemas import Envelope
from marketplace.publishing.revocations import CACHE_CONTROL, RevocationCache
from marketplace.trust.deps import KeyringDep
from marketplace.trust.schemas import SignedRecord

router = api_router(prefix="/api/v1/plugins", tags=["trust"])


def revocation_cache(app: FastAPI) -> RevocationCache:
    """This process's copy of the last list it signed, made on first use."""
    cache: RevocationCache | None = getattr(app.state, "revocation_cache", None)
    if cache is None:
        cache = RevocationCache()
        app.state.revocation_cache = cache
    return cache


@router.get(
    "/revocations",
    response_model=Envelope[SignedRecord],
    responses=NOT_MODIFIED,
    description="The signed revocation list: `payload` is the base64 of the canonical JSON "
    "`{issuedAt, items: [{kind, key, version, sha256, reason, revokedAt, logIndex}]}` (logIndex: "
    "the takedown's entry in the transparency log), every plugin and "
    "scenario version ever taken down, oldest first; `signature` is the Ed25519 signature of "
    "the payload bytes by the key `keyId` (GET /api/v1/keys). issuedAt is the start of the "
    "current hour, or the newest revocation's time when later. Cacheable: ETag, "
    "If-None-Match (304) and a short max-age.",
)
async def revocations(
    request: Request, _user: OptionalUser, session: DbSession, keyring: KeyringDep
) -> Any:
    signed = await revocation_cache(request.app).current(session, keyring)
    return conditional_response(request, signed.body, signed.etag, CACHE_CONTROL)


__all__ = ["revocation_cache", "router"]
