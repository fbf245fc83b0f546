# ruff: noqa: S608 - DDL assembled from constant fragments; no input reaches it
"""Plugin changes in generation order, for the in-process search index (issue 14)

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-24

Each process keeps its own search index (catalog.search_index) and brings it up to the
catalogue generation a request reads by applying the plugins changed since. Triggers note
every insert, update and delete of a plugin (any write path, raw SQL included) with no
generation; the statement that moves the generation (catalog.cache.bump_statement, always
the last of its transaction, holding the generation row until commit) stamps the
transaction's own notes with the new number. Generations therefore commit in order with
their notes: a reader that sees generation G sees every note stamped G or lower. A note
left unstamped by a writer that did not move the generation is stamped by the next one.

Notes older than KEEP generations are deleted by the same trigger; a process further
behind than that rebuilds its index instead of applying notes.
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

KEEP = 100_000  # catalog.search_index.KEPT_GENERATIONS must stay below this

STAMP = (
    "UPDATE plugin_search_changes SET generation = new.generation WHERE generation IS NULL; "
    f"DELETE FROM plugin_search_changes WHERE generation < new.generation - {KEEP};"
)


def _sqlite_upgrade() -> None:
    op.execute(
        "CREATE TABLE plugin_search_changes ("
        "id INTEGER PRIMARY KEY, plugin_id VARCHAR(36) NOT NULL, generation BIGINT)"
    )
    for event, row in (("INSERT", "new"), ("UPDATE", "new"), ("DELETE", "old")):
        op.execute(
            f"CREATE TRIGGER plugins_search_changes_{event.lower()} AFTER {event} ON plugins "
            f"BEGIN INSERT INTO plugin_search_changes (plugin_id) VALUES ({row}.id); END"
        )
    for event in ("INSERT", "UPDATE"):
        op.execute(
            f"CREATE TRIGGER catalog_generation_stamp_{event.lower()} AFTER {event} "
            f"ON catalog_generation BEGIN {STAMP} END"
        )


def _postgresql_upgrade() -> None:
    op.execute(
        "CREATE TABLE plugin_search_changes ("
        "id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, "
        "plugin_id VARCHAR(36) NOT NULL, generation BIGINT)"
    )
    op.execute(
        "CREATE FUNCTION marketplace_note_search_change() RETURNS trigger LANGUAGE plpgsql "
        "AS $$ BEGIN INSERT INTO plugin_search_changes (plugin_id) VALUES "
        "(CASE WHEN TG_OP = 'DELETE' THEN OLD.id ELSE NEW.id END); RETURN NULL; END $$"
    )
    op.execute(
        "CREATE TRIGGER plugins_search_changes AFTER INSERT OR UPDATE OR DELETE ON plugins "
        "FOR EACH ROW EXECUTE FUNCTION marketplace_note_search_change()"
    )
    op.execute(
        "CREATE FUNCTION marketplace_stamp_search_changes() RETURNS trigger LANGUAGE plpgsql "
        f"AS $$ BEGIN {STAMP.replace('new.', 'NEW.')} RETURN NULL; END $$"
    )
    op.execute(
        "CREATE TRIGGER catalog_generation_stamp AFTER INSERT OR UPDATE ON catalog_generation "
        "FOR EACH ROW EXECUTE FUNCTION marketplace_stamp_search_changes()"
    )


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        _sqlite_upgrade()
    else:
        _postgresql_upgrade()
    op.execute(
        "CREATE INDEX ix_plugin_search_changes_generation ON plugin_search_changes (generation)"
    )
    # The stamping UPDATE finds the transaction's own notes without reading the kept ones.
    op.execute(
        "CREATE INDEX ix_plugin_search_changes_unstamped ON plugin_search_changes (id) "
        "WHERE generation IS NULL"
    )


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for name in ("insert", "update", "delete"):
            op.execute(f"DROP TRIGGER plugins_search_changes_{name}")
        for name in ("insert", "update"):
            op.execute(f"DROP TRIGGER catalog_generation_stamp_{name}")
    else:
        op.execute("DROP TRIGGER catalog_generation_stamp ON catalog_generation")
        op.execute("DROP FUNCTION marketplace_stamp_search_changes()")
        op.execute("DROP TRIGGER plugins_search_changes ON plugins")
        op.execute("DROP FUNCTION marketplace_note_search_change()")
    op.execute("DROP TABLE plugin_search_changes")
