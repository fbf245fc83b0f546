"""Cached public reads are invalidated by the database transaction that changes them.

Rather than trusting every write path to remember to, a session hook notices flushed changes
to plugins, versions and categories and moves the generation in the same transaction, just
before it commits (so after every row lock: one lock order). Changes that only touch
counters keep cached totals (`listing=False`). Bulk UPDATE statements are not flushes: the
few that exist (download and rating counters) call `cache.bump_catalog_generation`.
"""

from __future__ import annotations

from itertools import chain
from typing import Any

from sqlalchemy import event, inspect
from sqlalchemy.orm import Session, UOWTransaction

from marketplace.catalog.cache import bump_statement
from marketplace.models import Category, Plugin, PluginVersion

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
        session.execute(bump_statement(session.get_bind().dialect.name, listing=listing))


def _forget(session: Session, *_args: Any) -> None:
    session.info.pop(_LISTING, None)
    session.info.pop(_COUNTS, None)


def install() -> None:
    """Register the hooks on every ORM session (idempotent)."""
    if not event.contains(Session, "after_flush", _note_changes):
        event.listen(Session, "after_flush", _note_changes)
        event.listen(Session, "before_commit", _bump_before_commit)
        event.listen(Session, "after_rollback", _forget)
