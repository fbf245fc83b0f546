"""Shapes of CONTRACT 15's log endpoints (hashes and entries in standard base64)."""

from __future__ import annotations

from marketplace.kit.schemas import OutputModel


class CheckpointOut(OutputModel):
    origin: str
    tree_size: int
    root_hash: str
    key_id: str
    signature: str


class LogItem(OutputModel):
    index: int
    entry: str


class LogEntries(OutputModel):
    items: list[LogItem]


class InclusionProof(OutputModel):
    index: int
    tree_size: int
    hashes: list[str]


class ConsistencyProof(OutputModel):
    first: int
    second: int
    hashes: list[str]
