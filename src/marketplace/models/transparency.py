"""The transparency log's tables (CONTRACT 15).

- `log_entries`: one row per decision, its exact leaf bytes. `(action, subject)` is unique:
  a version is approved once and taken down once, a key added once and retired once, so the
  database refuses a second entry for the same decision whatever races.
- `log_nodes`: every perfect subtree's hash as it completes, keyed `(level << 40) | index`
  (one integer: proofs read their O(log n) nodes with one `IN`).
- `log_head`: one row, the tree size and its compact range (the hashes appending needs and
  the root). Appenders lock it (`FOR UPDATE`; SQLite's writer lock), so indexes are
  consecutive.

Triggers (migration 0014) refuse UPDATE and DELETE on entries and nodes on both databases;
migration 0015 lets the database extend the tree when a decision inserts its entry.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Integer,
    LargeBinary,
    String,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from marketplace.kit.log_sql import NODE_LEVEL_SHIFT
from marketplace.models.base import Base

# SQLite makes an INTEGER PRIMARY KEY the row id (no second index); BIGINT elsewhere.
LogInteger = BigInteger().with_variant(Integer(), "sqlite")

__all__ = ["NODE_LEVEL_SHIFT", "LogEntry", "LogHead", "LogNode"]


class LogEntry(Base):
    __tablename__ = "log_entries"
    __table_args__ = (
        UniqueConstraint("action", "subject"),
        CheckConstraint(
            "action IN ('approve', 'takedown', 'key-add', 'key-retire')", name="action_valid"
        ),
        CheckConstraint("log_index >= 0", name="index_not_negative"),
    )

    log_index: Mapped[int] = mapped_column(LogInteger, primary_key=True, autoincrement=False)
    action: Mapped[str] = mapped_column(String(20), nullable=False)
    # The version id (approve, takedown) or the key id (key-add, key-retire).
    subject: Mapped[str] = mapped_column(String(64), nullable=False)
    leaf: Mapped[bytes] = mapped_column(LargeBinary, nullable=False)


class LogNode(Base):
    __tablename__ = "log_nodes"

    node_id: Mapped[int] = mapped_column(LogInteger, primary_key=True, autoincrement=False)
    hash: Mapped[bytes] = mapped_column(LargeBinary(32), nullable=False)


class LogHead(Base):
    __tablename__ = "log_head"
    __table_args__ = (
        CheckConstraint("id = 1", name="single_row"),
        CheckConstraint("size >= 0", name="size_not_negative"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    size: Mapped[int] = mapped_column(BigInteger, nullable=False)
    compact: Mapped[bytes] = mapped_column(LargeBinary, nullable=False)
    # Set by migration 0014 on a database that already held decisions: the service appends
    # them once, in historical order, before its first new entry.
    backfill_pending: Mapped[bool] = mapped_column(Boolean, nullable=False)
