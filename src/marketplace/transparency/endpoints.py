"""`/api/v1/log/...` (CONTRACT 15): the checkpoint, entries and proofs. Public.

Entries and proofs for a given tree size never change, so they are served with a year-long,
immutable cache lifetime; the checkpoint is revalidated on every fetch (`no-cache`): a
decision's entry is in the next checkpoint anyone fetches. The same log is also served in
the C2SP tlog-tiles layout under `/api/v1/log/c2sp/` (`tiles.py`).
"""

from __future__ import annotations

from typing import Annotated, Any

import anyio
from fastapi import FastAPI, Query, Request
from starlette.responses import Response

from marketplace.auth.deps import OptionalUser
from marketplace.db import DbSession
from marketplace.errors import NotFound, ValidationFailed
from marketplace.kit.error_codes import raises
from marketplace.kit.routing import api_router
from marketplace.kit.schemas import Envelope
from marketplace.transparency import proofs, tiles
from marketplace.transparency.checkpoint import Checkpoint, CheckpointSigner, log_origin
from marketplace.transparency.schemas import (
    CheckpointOut,
    ConsistencyProof,
    InclusionProof,
    LogEntries,
    LogItem,
)
from marketplace.trust.deps import KeyringDep
from marketplace.trust.keyring import Keyring
from marketplace_rules.canonical import b64encode

router = api_router(prefix="/api/v1/log", tags=["transparency"])

IMMUTABLE = "public, max-age=31536000, immutable"
TEXT: dict[str, Any] = {"content": {"text/plain": {"schema": {"type": "string"}}}}
BINARY: dict[str, Any] = {
    "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}
}
MAX_ENTRIES = 1000
# Far beyond any real log, small enough for every integer column and shift.
Position = Annotated[int, Query(ge=0, le=2**40)]


def checkpoint_signer(app: FastAPI) -> CheckpointSigner:
    signer: CheckpointSigner | None = getattr(app.state, "checkpoint_signer", None)
    if signer is None:
        signer = CheckpointSigner()
        app.state.checkpoint_signer = signer
    return signer


async def _past_the_tree(session: DbSession, name: str, value: int) -> None:
    """400 when `value` is past the tree size (read only when an answer came up short)."""
    size = (await proofs.current_tree(session)).size
    if value > size:
        raise ValidationFailed.field(name, f"is past the tree size ({size})")


@router.get("/checkpoint")
async def checkpoint(
    request: Request,
    _user: OptionalUser,
    session: DbSession,
    keyring: KeyringDep,
    response: Response,
) -> Envelope[CheckpointOut]:
    """The signed tree head: `signature` is the Ed25519 signature by `keyId` (GET
    /api/v1/keys) of the UTF-8 bytes `"<origin>\\n<treeSize>\\n<rootHash>\\n"`."""
    made = await _signed_checkpoint(request, session, keyring)
    response.headers["Cache-Control"] = "no-cache"
    return Envelope(
        data=CheckpointOut(
            origin=made.origin,
            tree_size=made.tree_size,
            root_hash=made.root_hash,
            key_id=made.key_id,
            signature=made.signature,
        )
    )


async def _signed_checkpoint(request: Request, session: DbSession, keyring: Keyring) -> Checkpoint:
    tree = await proofs.current_tree(session)
    origin = log_origin(request.app.state.settings.public_url)
    return await checkpoint_signer(request.app).current(keyring, origin, tree)


@router.get("/c2sp/checkpoint", response_class=Response, responses={200: TEXT})
async def c2sp_checkpoint(
    request: Request, _user: OptionalUser, session: DbSession, keyring: KeyringDep
) -> Response:
    """The checkpoint as a C2SP signed note (tlog-tiles' `checkpoint`)."""
    made = await _signed_checkpoint(request, session, keyring)
    keys = await anyio.to_thread.run_sync(keyring.keys)
    [key] = [key for key in keys if key.key_id == made.key_id]
    return Response(
        tiles.signed_note(made, key.public_key),
        media_type="text/plain; charset=utf-8",
        headers={"Cache-Control": "no-cache"},
    )


@router.get("/c2sp/tile/{path:path}", response_class=Response, responses={200: BINARY})
@raises(NotFound)
async def c2sp_tile(_user: OptionalUser, session: DbSession, path: str) -> Response:
    """tlog-tiles' `tile/<L>/<N>[.p/<W>]` and `tile/entries/<N>[.p/<W>]`."""
    try:
        level, index, width = tiles.parse_tile(path)
        if level is None:
            body = await tiles.entry_bundle(session, index, width)
        else:
            body = await tiles.hash_tile(session, level, index, width)
    except tiles.TileMissing:
        raise NotFound("No such tile in the transparency log") from None
    return Response(
        body, media_type="application/octet-stream", headers={"Cache-Control": IMMUTABLE}
    )


@router.get("/entries")
async def log_entries(
    _user: OptionalUser,
    session: DbSession,
    response: Response,
    start: Position,
    end: Position,
) -> Envelope[LogEntries]:
    """Entries `[start, end)` (at most 1000), each the base64 of its exact leaf bytes."""
    if end < start:
        raise ValidationFailed.field("end", "must not be less than start")
    if end - start > MAX_ENTRIES:
        raise ValidationFailed.field("end", f"at most {MAX_ENTRIES} entries a call")
    rows = await proofs.entries(session, start, end)
    complete = len(rows) == end - start
    if not complete:
        await _past_the_tree(session, "end", end)
    # Else what the table holds, as it is: a row deleted behind the service's back shows as
    # a gap a monitor names (and such a page is not cached).
    response.headers["Cache-Control"] = IMMUTABLE if complete else "no-store"
    return Envelope(
        data=LogEntries(items=[LogItem(index=i, entry=b64encode(leaf)) for i, leaf in rows])
    )


@router.get("/proof/inclusion")
async def inclusion(
    _user: OptionalUser,
    session: DbSession,
    response: Response,
    index: Position,
    tree_size: Annotated[int, Query(alias="treeSize", ge=1, le=2**40)],
) -> Envelope[InclusionProof]:
    """RFC 6962 audit path of entry `index` in the tree of the first `treeSize` entries."""
    if index >= tree_size:
        raise ValidationFailed.field("index", "must be less than treeSize")
    try:
        hashes = await proofs.inclusion_proof(session, index, tree_size)
    except proofs.LogCorrupt:
        await _past_the_tree(session, "treeSize", tree_size)
        raise
    response.headers["Cache-Control"] = IMMUTABLE
    return Envelope(
        data=InclusionProof(index=index, tree_size=tree_size, hashes=[b64encode(h) for h in hashes])
    )


@router.get("/proof/consistency")
async def consistency(
    _user: OptionalUser,
    session: DbSession,
    response: Response,
    first: Position,
    second: Position,
) -> Envelope[ConsistencyProof]:
    """RFC 6962 consistency proof between the trees of `first` and `second` entries (empty
    when they are equal or the first is empty)."""
    if first > second:
        raise ValidationFailed.field("first", "must not be greater than second")
    try:
        hashes = await proofs.consistency_proof(session, first, second)
    except proofs.LogCorrupt:
        await _past_the_tree(session, "second", second)
        raise
    response.headers["Cache-Control"] = IMMUTABLE
    return Envelope(
        data=ConsistencyProof(first=first, second=second, hashes=[b64encode(h) for h in hashes])
    )
