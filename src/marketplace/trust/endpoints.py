"""`GET /api/v1/keys`: the public keys that sign releases and revocation lists (CONTRACT 11)."""

from __future__ import annotations

import anyio
from starlette.responses import Response

from marketplace.kit.routing import api_router
from marketplace.kit.schemas import Envelope
from marketplace.trust.deps import KeyringDep
from marketplace.trust.schemas import PublicKeyOut, PublicKeys

router = api_router(prefix="/api/v1/keys", tags=["trust"])

# Clients re-read the list when they meet an unknown keyId, so a short cache is enough.
KEYS_CACHE_CONTROL = "public, max-age=300"


@router.get("")
async def public_keys(keyring: KeyringDep, response: Response) -> Envelope[PublicKeys]:
    """Every signing key, retired ones included, so old signatures still verify."""
    listing = await anyio.to_thread.run_sync(keyring.listing)
    response.headers["Cache-Control"] = KEYS_CACHE_CONTROL
    return Envelope(data=PublicKeys(items=[PublicKeyOut(**item) for item in listing]))
