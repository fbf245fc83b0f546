"""The log in the C2SP tlog-tiles layout (c2sp.org/tlog-tiles), so standard tooling can read it.

Under `/api/v1/log/c2sp`: `checkpoint` (a C2SP signed note: the checkpoint body and one
Ed25519 signature line whose key name is the origin), `tile/<L>/<N>[.p/<W>]` (up to 256
hashes of tree level 8·L, read from the stored perfect subtrees: a tile is one range query)
and `tile/entries/<N>[.p/<W>]` (the entries, each prefixed by its length as a big-endian
uint16). Tiles never change once they exist: a full tile, and each partial width, is served
with an immutable cache lifetime.
"""

from __future__ import annotations

import hashlib
import re

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.models import LogNode
from marketplace.models.transparency import NODE_LEVEL_SHIFT
from marketplace.transparency import proofs
from marketplace.transparency.checkpoint import Checkpoint, checkpoint_body
from marketplace_rules.canonical import b64decode, b64encode

TILE_HEIGHT = 8
TILE_WIDTH = 1 << TILE_HEIGHT
MAX_LEVEL = 5  # tlog-tiles: levels 0 to 5 (2**48 leaves)
ED25519_NOTE_TYPE = b"\x01"
_ELEMENT = re.compile(r"x\d{3}")
_LAST = re.compile(r"\d{3}")


class TileMissing(Exception):
    """No such tile: a malformed path, or one the tree does not have (yet)."""


def parse_index(elements: list[str]) -> int:
    """`x001/x234/067` -> 1234067: three-digit elements, all but the last with an `x`."""
    if not elements or not _LAST.fullmatch(elements[-1]):
        raise TileMissing
    if not all(_ELEMENT.fullmatch(element) for element in elements[:-1]):
        raise TileMissing
    if len(elements) > 1 and elements[0] == "x000":  # one spelling per index: no leading zeros
        raise TileMissing
    return int("".join(element.lstrip("x") for element in elements))


def parse_tile(path: str) -> tuple[int | None, int, int]:
    """(level, index, width) of a tile path: level None for an entry bundle, width 256 for
    a full tile."""
    elements = path.split("/")
    if len(elements) < 2:
        raise TileMissing
    level_text, rest = elements[0], elements[1:]
    width = TILE_WIDTH
    if len(rest) >= 2 and rest[-2].endswith(".p"):
        if not re.fullmatch(r"[1-9]\d{0,2}", rest[-1]) or int(rest[-1]) >= TILE_WIDTH:
            raise TileMissing
        width = int(rest[-1])
        rest = [*rest[:-2], rest[-2][:-2]]
    index = parse_index(rest)
    if level_text == "entries":
        return None, index, width
    if not re.fullmatch(r"[0-9]", level_text) or int(level_text) > MAX_LEVEL:
        raise TileMissing
    return int(level_text), index, width


def _check_exists(count: int, index: int, width: int) -> None:
    """The tree must hold the tile's hashes; a partial width only while the tile is partial."""
    start = index * TILE_WIDTH
    if count < start + width or (width < TILE_WIDTH and count >= start + TILE_WIDTH):
        raise TileMissing


async def hash_tile(session: AsyncSession, level: int, index: int, width: int) -> bytes:
    size = (await proofs.current_tree(session)).size
    tree_level = level * TILE_HEIGHT
    _check_exists(size >> tree_level, index, width)
    first = tree_level << NODE_LEVEL_SHIFT | index * TILE_WIDTH
    hashes = list(
        await session.scalars(
            select(LogNode.hash)
            .where(LogNode.node_id >= first, LogNode.node_id < first + width)
            .order_by(LogNode.node_id)
        )
    )
    if len(hashes) != width:
        raise proofs.LogCorrupt()
    return b"".join(hashes)


async def entry_bundle(session: AsyncSession, index: int, width: int) -> bytes:
    size = (await proofs.current_tree(session)).size
    _check_exists(size, index, width)
    start = index * TILE_WIDTH
    rows = await proofs.entries(session, start, start + width)
    if len(rows) != width:
        raise proofs.LogCorrupt()
    return b"".join(len(leaf).to_bytes(2, "big") + leaf for _, leaf in rows)


def note_key_hash(name: str, public_key: bytes) -> bytes:
    """C2SP signed-note key ID: SHA-256(name || 0x0A || 0x01 || key), first four bytes."""
    return hashlib.sha256(name.encode() + b"\n" + ED25519_NOTE_TYPE + public_key).digest()[:4]


def signed_note(made: Checkpoint, public_key: bytes) -> bytes:
    """The checkpoint as a C2SP signed note; its signature is the checkpoint's own (both
    sign the same body bytes)."""
    body = checkpoint_body(made.origin, made.tree_size, made.root_hash)
    stamp = b64encode(note_key_hash(made.origin, public_key) + b64decode(made.signature))
    return body + f"\n\u2014 {made.origin} {stamp}\n".encode()
