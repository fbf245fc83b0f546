"""RFC 6962 Merkle trees (CONTRACT 15), shared by the service that proves and the client that
checks.

- Hashes: a leaf is SHA-256(0x00 || entry), a node SHA-256(0x01 || left || right).
- Stored nodes: a *perfect subtree* `(level, index)` covers the leaves
  `[index << level, (index + 1) << level)`. Those never change once complete, so the service
  keeps each one as it completes and answers any proof from at most about 2·log2(n) of them.
- Any other range that RFC 6962's recursion produces starts at a multiple of a power of two at
  least as large as the range, so its hash is the right fold of the perfect subtrees of its
  binary decomposition (`perfect_subtrees`).
- Checking (`verify_inclusion`, `verify_consistency`) follows RFC 9162, sections 2.1.3.2 and
  2.1.4.2, which are independent of how the proof was made.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

HASH_SIZE = 32
Subtree = tuple[int, int]  # (level, index)
Range = tuple[int, int]  # [start, end) of leaf indexes


def leaf_hash(entry: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + entry).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def split_point(size: int) -> int:
    """The largest power of two smaller than `size` (size >= 2): RFC 6962's k."""
    return 1 << ((size - 1).bit_length() - 1)


def perfect_subtrees(start: int, end: int) -> list[Subtree]:
    """The perfect subtrees whose right fold is the hash of leaves [start, end), left first."""
    subtrees: list[Subtree] = []
    size = end - start
    position = start
    for level in range(size.bit_length() - 1, -1, -1):
        if size >> level & 1:
            subtrees.append((level, position >> level))
            position += 1 << level
    return subtrees


def fold(hashes: Sequence[bytes]) -> bytes:
    """The hash of consecutive perfect subtrees, biggest first (the right fold)."""
    if not hashes:
        return hashlib.sha256(b"").digest()  # RFC 6962: the hash of an empty tree
    result = hashes[-1]
    for left in reversed(hashes[:-1]):
        result = node_hash(left, result)
    return result


def inclusion_ranges(index: int, size: int) -> list[Range]:
    """RFC 6962 PATH(index, D[size]) as leaf ranges, the leaf's sibling first."""
    if not 0 <= index < size:
        raise ValueError("the index must be inside the tree")
    path: list[Range] = []
    start, end = 0, size
    while end - start > 1:
        middle = start + split_point(end - start)
        if index < middle:
            path.append((middle, end))
            end = middle
        else:
            path.append((start, middle))
            start = middle
    path.reverse()
    return path


def consistency_ranges(first: int, second: int) -> list[Range]:
    """RFC 6962 PROOF(first, D[second]) as leaf ranges, in proof order (empty when the two
    sizes are equal or the first tree is empty)."""
    if not 0 <= first <= second:
        raise ValueError("the first size must be between 0 and the second")
    if first in (0, second):
        return []
    proof: list[Range] = []
    start, end, whole = 0, second, True
    remaining = first
    while True:
        size = end - start
        if remaining == size:
            if not whole:
                proof.append((start, end))
            break
        middle = split_point(size)
        if remaining <= middle:
            proof.append((start + middle, end))
            end = start + middle
        else:
            proof.append((start, start + middle))
            start += middle
            remaining -= middle
            whole = False
    proof.reverse()
    return proof


def subtrees_of(ranges: Iterable[Range]) -> set[Subtree]:
    """Every stored node the hashes of `ranges` need."""
    return {subtree for start, end in ranges for subtree in perfect_subtrees(start, end)}


def range_hashes(ranges: Sequence[Range], nodes: Mapping[Subtree, bytes]) -> list[bytes]:
    """The hash of each range, from the stored nodes (`subtrees_of(ranges)` must be there)."""
    return [fold([nodes[subtree] for subtree in perfect_subtrees(*span)]) for span in ranges]


@dataclass
class CompactRange:
    """The perfect subtrees of the binary decomposition of a tree's size, biggest first:
    everything appending needs, and the root. `append` returns the nodes it completed."""

    size: int = 0
    hashes: list[bytes] = field(default_factory=list)

    @classmethod
    def from_bytes(cls, size: int, packed: bytes) -> CompactRange:
        hashes = [packed[i : i + HASH_SIZE] for i in range(0, len(packed), HASH_SIZE)]
        if len(hashes) != size.bit_count() or len(packed) % HASH_SIZE:
            raise ValueError("the compact range does not match the tree size")
        return cls(size, hashes)

    def to_bytes(self) -> bytes:
        return b"".join(self.hashes)

    def root(self) -> bytes:
        return fold(self.hashes)

    def append(self, leaf: bytes) -> list[tuple[Subtree, bytes]]:
        """Add one leaf hash; the perfect subtrees this completes, the leaf first."""
        index = self.size
        completed: list[tuple[Subtree, bytes]] = [((0, index), leaf)]
        current = leaf
        level = 0
        # Each trailing 1 bit of the old size is a subtree of that level waiting for a sibling.
        while index >> level & 1:
            current = node_hash(self.hashes.pop(), current)
            level += 1
            completed.append(((level, index >> level), current))
        self.hashes.append(current)
        self.size += 1
        return completed


def root_of(leaves: Iterable[bytes]) -> bytes:
    """The root over leaf hashes, in O(log n) memory (a monitor streams the whole log)."""
    compact = CompactRange()
    for leaf in leaves:
        compact.append(leaf)
    return compact.root()


def _shift_while_even(fn: int, sn: int) -> tuple[int, int]:
    while fn and not fn & 1:
        fn >>= 1
        sn >>= 1
    return fn, sn


def verify_inclusion(
    leaf: bytes, index: int, size: int, path: Sequence[bytes], root: bytes
) -> bool:
    """RFC 9162 2.1.3.2: `leaf` (a leaf hash) is at `index` of the tree of `size` and `root`."""
    if not 0 <= index < size:
        return False
    fn, sn, result = index, size - 1, leaf
    for sibling in path:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            result = node_hash(sibling, result)
            if not fn & 1:
                fn, sn = _shift_while_even(fn, sn)
        else:
            result = node_hash(result, sibling)
        fn >>= 1
        sn >>= 1
    return sn == 0 and result == root


def verify_consistency(
    first: int, second: int, first_root: bytes, second_root: bytes, proof: Sequence[bytes]
) -> bool:
    """RFC 9162 2.1.4.2: the tree of `second` leaves extends the tree of `first` leaves."""
    if not 0 <= first <= second:
        return False
    if first == second:
        return not proof and first_root == second_root
    if first == 0:
        return not proof
    if not proof:
        return False
    path = list(proof)
    if first & (first - 1) == 0:  # an exact power of two: the old root is a node of the new
        path.insert(0, first_root)
    fn, sn = first - 1, second - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    first_result = second_result = path[0]
    for hash_ in path[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            first_result = node_hash(hash_, first_result)
            second_result = node_hash(hash_, second_result)
            if not fn & 1:
                fn, sn = _shift_while_even(fn, sn)
        else:
            second_result = node_hash(second_result, hash_)
        fn >>= 1
        sn >>= 1
    return sn == 0 and first_result == first_root and second_result == second_root
