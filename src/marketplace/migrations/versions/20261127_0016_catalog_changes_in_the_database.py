# ruff: noqa: S608 - DDL assembled from constant fragments; no input reaches it
"""catalogue freshness recorded by the database alone (issue 30)

Every change to listed data (a plugin, a plugin version, a category) moves the catalogue
generation by a trigger, whatever wrote it: the ORM, a bulk UPDATE, raw SQL, a restore.
Before this, an ORM session hook moved it for ORM writes and the bulk writers called a bump
of their own; both are gone.

- A plugin change that touches only its counters (downloads, ratings, `updated_at`) moves
  `generation` but not `listing_generation`, so cached totals stay; anything else moves both.
- PostgreSQL: a deferred constraint trigger moves the generation at commit, after every row
  lock the transaction took (one lock order: rows, then the generation row), once per
  transaction (a transaction-local setting remembers it). The search notes of migration
  0012 are written by immediate triggers, so the move stamps them all.
- SQLite: one trigger per event writes the plugin's search note and then moves the
  generation (which stamps the note): SQLite serialises writers, and one trigger makes the
  order of the two certain. An UPDATE that changes nothing moves nothing.

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-27
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

LISTED_TABLES = ("plugins", "plugin_versions", "categories")
# Plugin columns whose change does not move a plugin in or out of any listing or filter.
COUNTERS = ("download_count", "rating_count", "rating_sum", "updated_at")
# Every other plugin column, as of this migration (a test holds the list to the model).
PLUGIN_LISTING_COLUMNS = (
    "plugin_key", "name", "name_zh", "description", "description_zh", "type", "category",
    "is_free", "price", "validity_days", "tags", "license", "homepage", "repository", "icon",
    "source", "platforms", "featured", "enabled", "review_status", "review_note",
    "reviewed_by", "latest_version", "owner_id", "id", "created_at",
)  # fmt: skip


def _differs(columns: Sequence[str]) -> str:
    return " OR ".join(f"OLD.{c} IS NOT NEW.{c}" for c in columns)


def _sqlite_bump(listing: str) -> str:
    return (
        "UPDATE catalog_generation SET generation = generation + 1, "
        f"listing_generation = listing_generation + ({listing}) WHERE id = 1;"
    )


SQLITE_NOTE = "INSERT INTO plugin_search_changes (plugin_id) VALUES ({row}.id);"
SQLITE_OLD_NOTE_TRIGGERS = ("insert", "update", "delete")


def _sqlite_upgrade() -> None:
    # Migration 0012's note triggers become part of the one trigger per event.
    for event in SQLITE_OLD_NOTE_TRIGGERS:
        op.execute(f"DROP TRIGGER plugins_search_changes_{event}")
    listing_changed = _differs(PLUGIN_LISTING_COLUMNS)
    anything_changed = _differs(PLUGIN_LISTING_COLUMNS + COUNTERS)
    op.execute(
        "CREATE TRIGGER plugins_changed_insert AFTER INSERT ON plugins BEGIN "
        f"{SQLITE_NOTE.format(row='NEW')} {_sqlite_bump('1')} END"
    )
    op.execute(
        f"CREATE TRIGGER plugins_changed_update AFTER UPDATE ON plugins WHEN {anything_changed} "
        f"BEGIN {SQLITE_NOTE.format(row='NEW')} "
        f"{_sqlite_bump(f'CASE WHEN {listing_changed} THEN 1 ELSE 0 END')} END"
    )
    op.execute(
        "CREATE TRIGGER plugins_changed_delete AFTER DELETE ON plugins BEGIN "
        f"{SQLITE_NOTE.format(row='OLD')} {_sqlite_bump('1')} END"
    )
    for table in LISTED_TABLES[1:]:
        for event in ("INSERT", "UPDATE", "DELETE"):
            op.execute(
                f"CREATE TRIGGER {table}_changed_{event.lower()} AFTER {event} ON {table} "
                f"BEGIN {_sqlite_bump('1')} END"
            )


POSTGRES_FUNCTION = f"""
CREATE FUNCTION marketplace_catalog_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  listing boolean := true;
  bumped text := coalesce(current_setting('marketplace.catalog_bumped', true), '');
BEGIN
  IF TG_TABLE_NAME = 'plugins' AND TG_OP = 'UPDATE' THEN
    IF to_jsonb(OLD) = to_jsonb(NEW) THEN
      RETURN NULL;
    END IF;
    listing := (to_jsonb(OLD) - ARRAY{list(COUNTERS)}::text[])
      IS DISTINCT FROM (to_jsonb(NEW) - ARRAY{list(COUNTERS)}::text[]);
  END IF;
  IF bumped = 'listing' OR (bumped = 'counters' AND NOT listing) THEN
    RETURN NULL;
  END IF;
  UPDATE catalog_generation SET
    generation = generation + CASE WHEN bumped = '' THEN 1 ELSE 0 END,
    listing_generation = listing_generation + CASE WHEN listing THEN 1 ELSE 0 END
  WHERE id = 1;
  PERFORM set_config(
    'marketplace.catalog_bumped', CASE WHEN listing THEN 'listing' ELSE 'counters' END, true
  );
  RETURN NULL;
END $$
"""


def _postgresql_upgrade() -> None:
    op.execute(POSTGRES_FUNCTION)
    for table in LISTED_TABLES:
        op.execute(
            f"CREATE CONSTRAINT TRIGGER {table}_catalog_changed AFTER INSERT OR UPDATE OR DELETE "
            f"ON {table} DEFERRABLE INITIALLY DEFERRED FOR EACH ROW "
            "EXECUTE FUNCTION marketplace_catalog_changed()"
        )


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        _sqlite_upgrade()
    else:
        _postgresql_upgrade()


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for table in LISTED_TABLES:
            for event in ("insert", "update", "delete"):
                op.execute(f"DROP TRIGGER {table}_changed_{event}")
        for event, row in (("INSERT", "new"), ("UPDATE", "new"), ("DELETE", "old")):
            op.execute(
                f"CREATE TRIGGER plugins_search_changes_{event.lower()} AFTER {event} ON plugins "
                f"BEGIN INSERT INTO plugin_search_changes (plugin_id) VALUES ({row}.id); END"
            )
    else:
        for table in LISTED_TABLES:
            op.execute(f"DROP TRIGGER {table}_catalog_changed ON {table}")
        op.execute("DROP FUNCTION marketplace_catalog_changed()")
