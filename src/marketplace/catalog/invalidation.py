"""Cached public reads are invalidated by the database transaction that changes them.

Rather than trusting every write path to remember `bump_catalog_generation`, a session hook
notices flushed changes to plugins, versions and categories and bumps the generation in the
same transaction, just before it commits (so after every row lock: one lock order). Changes
that only touch counters (downloads, ratings) keep cached totals (`listing=False`).
"""

from __future__ import annotations

from itertools import chain
from typing import Any

from sqlalchemy import event, inspect
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session, UOWTransaction

from marketplace.models import CatalogGeneration, Category, Plugin, PluginVersion

_COUNTERS = frozenset({"download_count", "rating_count", "rating_sum", "updated_at"})
_LISTING = "catalog_listing_changed"
_COUNTS = "catalog_counters_changed"


def _only_counters(plugin: Plugin) -> bool:
    state = inspect(plugin)
    changed = {a.key for a in state.attrs if a.history.has_changes()}
    return bool(changed) and changed <= _COUNTERS


def _note_changes(session: Session, _context: UOWTransaction) -> None:
    for obj in chain(session.new, session.dirty, session.deleted):
        if isinstance(obj, Plugin) and obj in session.dirty and _only_counters(obj):
            session.info[_COUNTS] = True
        elif isinstance(obj, Plugin | PluginVersion | Category):
            session.info[_LISTING] = True


def _bump_before_commit(session: Session) -> None:
    session.flush()  # pending changes are noted by the flush hook
    listing = session.info.pop(_LISTING, False)
    counters = session.info.pop(_COUNTS, False)
    if listing or counters:
        session.execute(_bump_statement(session, listing=listing))


def _forget(session: Session, *_args: Any) -> None:
    session.info.pop(_LISTING, None)
    session.info.pop(_COUNTS, None)


def _bump_statement(session: Session, *, listing: bool) -> Any:
    row = CatalogGeneration
    values = {"id": 1, "generation": 1, "listing_generation": 1}
    changes = {
        "generation": row.generation + 1,
        "listing_generation": row.listing_generation + (1 if listing else 0),
    }
    insert = postgresql_insert if session.get_bind().dialect.name == "postgresql" else sqlite_insert
    return insert(row).values(values).on_conflict_do_update(index_elements=[row.id], set_=changes)


def install() -> None:
    """Register the hooks on every ORM session (idempotent)."""
    if not event.contains(Session, "after_flush", _note_changes):
        event.listen(Session, "after_flush", _note_changes)
        event.listen(Session, "before_commit", _bump_before_commit)
        event.listen(Session, "after_rollback", _forget)
