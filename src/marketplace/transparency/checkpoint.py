"""The signed checkpoint (CONTRACT 15): the body of a C2SP checkpoint, signed with the release
keyring.

Ed25519 signatures are deterministic, so every process signs the same tree with the same key
into the same bytes; each process keeps the last one it made and signs again only when the
tree or the signing key changed.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

import anyio

from marketplace.trust.keyring import Keyring
from marketplace_rules.canonical import b64encode
from marketplace_rules.merkle import CompactRange


def log_origin(public_url: str) -> str:
    """The service's public URL without its scheme (nor a trailing slash), then `/log`."""
    parts = urlsplit(public_url)
    return f"{parts.netloc}{parts.path.rstrip('/')}/log"


def checkpoint_body(origin: str, size: int, root_b64: str) -> bytes:
    return f"{origin}\n{size}\n{root_b64}\n".encode()


@dataclass(frozen=True)
class Checkpoint:
    origin: str
    tree_size: int
    root_hash: str  # base64
    key_id: str
    signature: str  # base64


class CheckpointSigner:
    """This process's last checkpoint, reused while the tree and the signing key hold."""

    def __init__(self) -> None:
        self._last: Checkpoint | None = None

    async def current(self, keyring: Keyring, origin: str, tree: CompactRange) -> Checkpoint:
        root = b64encode(tree.root())
        signing = await anyio.to_thread.run_sync(keyring.signing_key)  # reads the keyring file
        last = self._last
        if last is not None and (last.origin, last.tree_size, last.root_hash, last.key_id) == (
            origin,
            tree.size,
            root,
            signing.key_id,
        ):
            return last
        signature = b64encode(signing.private.sign(checkpoint_body(origin, tree.size, root)))
        made = Checkpoint(origin, tree.size, root, signing.key_id, signature)
        self._last = made
        return made
