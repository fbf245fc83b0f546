# ruff: noqa: S608 - DDL assembled from constant fragments; no input reaches it
"""catalogue freshness recorded by the database alone (issue 30)

Every change to what the public reads show moves the catalogue generation by a trigger,
whatever wrote it (the ORM, a bulk UPDATE, raw SQL): plugins, plugin versions and
categories, and what the pages show beside them (ratings and their comments, a developer's
public name). Before this, an ORM session hook moved it for ORM writes and the bulk writers
called a bump of their own; both are gone. Triggers do not see a database file copied back
or a table truncated: after a restore, restart the service (docs/deploy.md).

- `listing_generation` moves with what decides membership, filters and totals: a plugin's
  columns other than its counters (downloads, ratings, `updated_at`), its versions, the
  categories. Everything else here moves `generation` only, so cached totals stay.
- PostgreSQL: a deferred constraint trigger moves the generation at commit, after every row
  lock the transaction took (one lock order: rows, then the generation row), once per
  transaction (a transaction-local setting remembers it). The search notes of migration
  0012 are written by immediate triggers, so that move stamps them all.
- SQLite: one trigger per event and row; on plugins it writes the plugin's search note and
  then moves the generation (which stamps the note): SQLite serialises writers, and one
  trigger makes the order of the two certain. A plugin UPDATE that changes nothing moves
  nothing.
- Both write the row back if it is missing (an upsert), as the bump they replace did.

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
SHOWN_TABLES = ("ratings", "developer_profiles")  # shown beside plugins, not listed
# Plugin columns whose change does not move a plugin in or out of any listing or filter.
COUNTERS = ("download_count", "rating_count", "rating_sum", "updated_at")
# Every other plugin column, as of this migration (a test holds the trigger to the table).
PLUGIN_LISTING_COLUMNS = (
    "plugin_key", "name", "name_zh", "description", "description_zh", "type", "category",
    "is_free", "price", "validity_days", "tags", "license", "homepage", "repository", "icon",
    "source", "platforms", "featured", "enabled", "review_status", "review_note",
    "reviewed_by", "latest_version", "owner_id", "id", "created_at",
)  # fmt: skip
# A developer's public name is the profile's display name, else the account's name.
NAME_CHANGED = "OLD.name IS NOT NEW.name"
SQLITE_NOTE = "INSERT INTO plugin_search_changes (plugin_id) VALUES ({row}.id);"


def _differs(columns: Sequence[str]) -> str:
    return " OR ".join(f"OLD.{c} IS NOT NEW.{c}" for c in columns)


def _sqlite_bump(listing: str) -> str:
    return (
        "INSERT INTO catalog_generation (id, generation, listing_generation) VALUES (1, 1, 1) "
        "ON CONFLICT (id) DO UPDATE SET generation = generation + 1, "
        f"listing_generation = listing_generation + ({listing});"
    )


def _sqlite_trigger(name: str, event: str, table: str, body: str, when: str = "") -> None:
    condition = f" WHEN {when}" if when else ""
    op.execute(f"CREATE TRIGGER {name} AFTER {event} ON {table}{condition} BEGIN {body} END")


def _sqlite_upgrade() -> None:
    # Migration 0012's note triggers become part of the one trigger per event.
    for event in ("insert", "update", "delete"):
        op.execute(f"DROP TRIGGER plugins_search_changes_{event}")
    listing_changed = _differs(PLUGIN_LISTING_COLUMNS)
    anything_changed = _differs(PLUGIN_LISTING_COLUMNS + COUNTERS)
    new_note, old_note = SQLITE_NOTE.format(row="NEW"), SQLITE_NOTE.format(row="OLD")
    _sqlite_trigger("plugins_changed_insert", "INSERT", "plugins", new_note + _sqlite_bump("1"))
    _sqlite_trigger(
        "plugins_changed_update",
        "UPDATE",
        "plugins",
        new_note + _sqlite_bump(f"CASE WHEN {listing_changed} THEN 1 ELSE 0 END"),
        when=anything_changed,
    )
    _sqlite_trigger("plugins_changed_delete", "DELETE", "plugins", old_note + _sqlite_bump("1"))
    for table in (*LISTED_TABLES[1:], *SHOWN_TABLES):
        listing = "1" if table in LISTED_TABLES else "0"
        for event in ("INSERT", "UPDATE", "DELETE"):
            _sqlite_trigger(f"{table}_changed_{event.lower()}", event, table, _sqlite_bump(listing))
    _sqlite_trigger("users_changed_update", "UPDATE", "users", _sqlite_bump("0"), NAME_CHANGED)


POSTGRES_FUNCTION = f"""
CREATE FUNCTION marketplace_catalog_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  bumped text := coalesce(current_setting('marketplace.catalog_bumped', true), '');
  listing boolean := TG_TABLE_NAME IN {LISTED_TABLES};
  old_row jsonb;
  new_row jsonb;
BEGIN
  IF bumped = 'listing' OR (bumped = 'counters' AND NOT listing) THEN
    RETURN NULL;
  END IF;
  IF TG_TABLE_NAME = 'plugins' AND TG_OP = 'UPDATE' THEN
    old_row := to_jsonb(OLD);
    new_row := to_jsonb(NEW);
    IF old_row = new_row THEN
      RETURN NULL;
    END IF;
    listing := (old_row - ARRAY{list(COUNTERS)}::text[])
      IS DISTINCT FROM (new_row - ARRAY{list(COUNTERS)}::text[]);
    IF bumped = 'counters' AND NOT listing THEN
      RETURN NULL;
    END IF;
  END IF;
  INSERT INTO catalog_generation AS g (id, generation, listing_generation) VALUES (1, 1, 1)
  ON CONFLICT (id) DO UPDATE SET
    generation = g.generation + CASE WHEN bumped = '' THEN 1 ELSE 0 END,
    listing_generation = g.listing_generation + CASE WHEN listing THEN 1 ELSE 0 END;
  PERFORM set_config(
    'marketplace.catalog_bumped', CASE WHEN listing THEN 'listing' ELSE 'counters' END, true
  );
  RETURN NULL;
END $$
"""


def _postgres_trigger(table: str, events: str, when: str = "") -> None:
    condition = f" WHEN ({when})" if when else ""
    op.execute(
        f"CREATE CONSTRAINT TRIGGER {table}_catalog_changed AFTER {events} ON {table} "
        f"DEFERRABLE INITIALLY DEFERRED FOR EACH ROW{condition} "
        "EXECUTE FUNCTION marketplace_catalog_changed()"
    )


def _postgresql_upgrade() -> None:
    op.execute(POSTGRES_FUNCTION)
    for table in (*LISTED_TABLES, *SHOWN_TABLES):
        _postgres_trigger(table, "INSERT OR UPDATE OR DELETE")
    _postgres_trigger("users", "UPDATE OF name", NAME_CHANGED.replace("IS NOT", "IS DISTINCT FROM"))


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        _sqlite_upgrade()
    else:
        _postgresql_upgrade()


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for table in (*LISTED_TABLES, *SHOWN_TABLES):
            for event in ("insert", "update", "delete"):
                op.execute(f"DROP TRIGGER {table}_changed_{event}")
        op.execute("DROP TRIGGER users_changed_update")
        for event, row in (("INSERT", "new"), ("UPDATE", "new"), ("DELETE", "old")):
            op.execute(
                f"CREATE TRIGGER plugins_search_changes_{event.lower()} AFTER {event} ON plugins "
                f"BEGIN INSERT INTO plugin_search_changes (plugin_id) VALUES ({row}.id); END"
            )
    else:
        for table in (*LISTED_TABLES, *SHOWN_TABLES, "users"):
            op.execute(f"DROP TRIGGER {table}_catalog_changed ON {table}")
        op.execute("DROP FUNCTION marketplace_catalog_changed()")
