"""marketplace_rules.merkle against RFC 6962 as written (the recursive definitions) and an
independent implementation (pymerkle): roots, audit paths and consistency proofs."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pymerkle import InmemoryTree

from marketplace_rules.merkle import (
    CompactRange,
    consistency_ranges,
    fold,
    inclusion_ranges,
    leaf_hash,
    node_hash,
    range_hashes,
    root_of,
    split_point,
    verify_consistency,
    verify_inclusion,
)


def mth(entries: list[bytes]) -> bytes:
    """RFC 6962 2.1's Merkle Tree Hash, recursively, exactly as the RFC states it."""
    if not entries:
        return hashlib.sha256(b"").digest()
    if len(entries) == 1:
        return leaf_hash(entries[0])
    k = split_point(len(entries))
    return node_hash(mth(entries[:k]), mth(entries[k:]))


def path(m: int, entries: list[bytes]) -> list[bytes]:
    """RFC 6962 2.1.1 PATH(m, D[n])."""
    n = len(entries)
    if n == 1:
        return []
    k = split_point(n)
    if m < k:
        return [*path(m, entries[:k]), mth(entries[k:])]
    return [*path(m - k, entries[k:]), mth(entries[:k])]


def subproof(m: int, entries: list[bytes], whole: bool) -> list[bytes]:
    """RFC 6962 2.1.2 SUBPROOF(m, D[n], b)."""
    n = len(entries)
    if m == n:
        return [] if whole else [mth(entries)]
    k = split_point(n)
    if m <= k:
        return [*subproof(m, entries[:k], whole), mth(entries[k:])]
    return [*subproof(m - k, entries[k:], False), mth(entries[:k])]


def grown(n: int) -> tuple[list[bytes], dict[tuple[int, int], bytes], CompactRange]:
    entries = [f'{{"index":{i}}}'.encode() for i in range(n)]
    nodes: dict[tuple[int, int], bytes] = {}
    compact = CompactRange()
    for data in entries:
        nodes.update(compact.append(leaf_hash(data)))
    return entries, nodes, compact


def test_the_root_agrees_with_pymerkle_an_independent_implementation() -> None:
    tree = InmemoryTree(algorithm="sha256")
    compact = CompactRange()
    for i in range(300):
        data = f'{{"action":"approve","index":{i}}}'.encode()
        tree.append_entry(data)
        compact.append(leaf_hash(data))
        assert compact.root() == tree.get_root(), i + 1


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 7, 8, 9, 16, 31, 33, 64, 100])
def test_every_proof_is_the_rfc_one_and_verifies(n: int) -> None:
    entries, nodes, compact = grown(n)
    assert compact.root() == mth(entries) == root_of(leaf_hash(e) for e in entries)
    for m in range(n):
        proof = range_hashes(inclusion_ranges(m, n), nodes)
        assert proof == path(m, entries)
        assert verify_inclusion(leaf_hash(entries[m]), m, n, proof, compact.root())
    for m in range(1, n + 1):
        proof = range_hashes(consistency_ranges(m, n), nodes)
        assert proof == (subproof(m, entries, True) if m < n else [])
        assert verify_consistency(m, n, mth(entries[:m]), compact.root(), proof)


@given(st.integers(2, 200), st.data())
def test_a_changed_hash_or_a_wrong_place_fails_verification(n: int, data: st.DataObject) -> None:
    entries, nodes, compact = grown(n)
    root = compact.root()
    m = data.draw(st.integers(0, n - 1))
    proof = range_hashes(inclusion_ranges(m, n), nodes)
    leaf = leaf_hash(entries[m])
    assert verify_inclusion(leaf, m, n, proof, root)
    assert not verify_inclusion(leaf_hash(b"forged"), m, n, proof, root)
    assert (
        not verify_inclusion(leaf, (m + 1) % n, n, proof, root)
        or entries[m] == entries[(m + 1) % n]
    )
    assert not verify_inclusion(leaf, m, n, [*proof, proof[0]], root)
    spoiled = [bytes(32), *proof[1:]]
    assert not verify_inclusion(leaf, m, n, spoiled, root)
    first = data.draw(st.integers(1, n - 1))
    consistency = range_hashes(consistency_ranges(first, n), nodes)
    old_root = mth(entries[:first])
    assert verify_consistency(first, n, old_root, root, consistency)
    # A fork: another first tree of the same size is not consistent with this one.
    other = mth([*entries[: first - 1], b"another entry"])
    assert not verify_consistency(first, n, other, root, consistency)
    assert not verify_consistency(first, n, old_root, root, consistency[:-1])
    assert not verify_consistency(first, n, old_root, node_hash(root, root), consistency)


def test_equal_and_empty_trees() -> None:
    _, _, compact = grown(5)
    root = compact.root()
    assert verify_consistency(5, 5, root, root, [])
    assert not verify_consistency(5, 5, root, fold([root, root]), [])
    assert verify_consistency(0, 5, b"", root, [])
    assert not verify_inclusion(leaf_hash(b"x"), 5, 5, [], root)


def test_a_compact_range_round_trips_and_refuses_the_wrong_size() -> None:
    _, _, compact = grown(11)
    again = CompactRange.from_bytes(11, compact.to_bytes())
    assert again.root() == compact.root()
    with pytest.raises(ValueError, match="compact range"):
        CompactRange.from_bytes(12, compact.to_bytes())
