# ruff: noqa: S608 - DDL assembled from constant fragments; no input reaches it
"""transparency log: entries, node hashes, the head row, immutability triggers (CONTRACT 15)

A database that already holds decisions gets `backfill_pending`: the service appends its past
keys, approvals and takedowns once, in historical order, before its first new entry
(`publishing.log_backfill`; it needs the signing keyring, which a migration does not have).

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-27
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

LOG_INTEGER = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
IMMUTABLE = ("log_entries", "log_nodes")
# SQLite's INSERT OR REPLACE deletes the row it conflicts with without firing DELETE triggers:
# an insert that would meet an existing row is refused before it can replace it.
SQLITE_REPLACE_GUARDS = {
    "log_entries": "log_index = NEW.log_index OR (action = NEW.action AND subject = NEW.subject)",
    "log_nodes": "node_id = NEW.node_id",
}
PAST_DECISIONS = (
    "SELECT EXISTS (SELECT 1 FROM plugin_versions WHERE review_status IN ('approved', "
    "'taken_down')) OR EXISTS (SELECT 1 FROM scenario_versions WHERE review_status IN "
    "('approved', 'taken_down')) OR EXISTS (SELECT 1 FROM revocations)"
)


def upgrade() -> None:
    op.create_table(
        "log_entries",
        sa.Column("log_index", LOG_INTEGER, autoincrement=False, nullable=False),
        sa.Column("action", sa.String(length=20), nullable=False),
        sa.Column("subject", sa.String(length=64), nullable=False),
        sa.Column("leaf", sa.LargeBinary(), nullable=False),
        sa.CheckConstraint(
            "action IN ('approve', 'takedown', 'key-add', 'key-retire')",
            name=op.f("ck_log_entries_action_valid"),
        ),
        sa.CheckConstraint("log_index >= 0", name=op.f("ck_log_entries_index_not_negative")),
        sa.PrimaryKeyConstraint("log_index", name=op.f("pk_log_entries")),
        sa.UniqueConstraint("action", "subject", name=op.f("uq_log_entries_action_subject")),
    )
    op.create_table(
        "log_nodes",
        sa.Column("node_id", LOG_INTEGER, autoincrement=False, nullable=False),
        sa.Column("hash", sa.LargeBinary(length=32), nullable=False),
        sa.PrimaryKeyConstraint("node_id", name=op.f("pk_log_nodes")),
    )
    op.create_table(
        "log_head",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("compact", sa.LargeBinary(), nullable=False),
        sa.Column("backfill_pending", sa.Boolean(), nullable=False),
        sa.CheckConstraint("id = 1", name=op.f("ck_log_head_single_row")),
        sa.CheckConstraint("size >= 0", name=op.f("ck_log_head_size_not_negative")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_log_head")),
    )
    with op.batch_alter_table("revocations") as batch:
        batch.add_column(sa.Column("log_index", sa.BigInteger(), nullable=True))

    bind = op.get_bind()
    pending = bool(bind.execute(sa.text(PAST_DECISIONS)).scalar())
    head = sa.table(
        "log_head",
        sa.column("id", sa.Integer()),
        sa.column("size", sa.BigInteger()),
        sa.column("compact", sa.LargeBinary()),
        sa.column("backfill_pending", sa.Boolean()),
    )
    op.bulk_insert(head, [{"id": 1, "size": 0, "compact": b"", "backfill_pending": pending}])

    if bind.dialect.name == "sqlite":
        for table in IMMUTABLE:
            for event in ("UPDATE", "DELETE"):
                op.execute(
                    f"CREATE TRIGGER {table}_refuse_{event.lower()} BEFORE {event} ON {table} "
                    f"BEGIN SELECT RAISE(ABORT, '{table} are append-only'); END"
                )
            op.execute(
                f"CREATE TRIGGER {table}_refuse_replace BEFORE INSERT ON {table} "
                f"WHEN EXISTS (SELECT 1 FROM {table} WHERE {SQLITE_REPLACE_GUARDS[table]}) "
                f"BEGIN SELECT RAISE(ABORT, '{table} are append-only'); END"
            )
    else:
        op.execute(
            "CREATE FUNCTION marketplace_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$ "
            "BEGIN RAISE EXCEPTION '% are append-only', TG_TABLE_NAME; END $$"
        )
        for table in IMMUTABLE:
            op.execute(
                f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
                "FOR EACH ROW EXECUTE FUNCTION marketplace_log_append_only()"
            )


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for table in IMMUTABLE:
            for event in ("update", "delete", "replace"):
                op.execute(f"DROP TRIGGER {table}_refuse_{event}")
    else:
        for table in IMMUTABLE:
            op.execute(f"DROP TRIGGER {table}_append_only ON {table}")
        op.execute("DROP FUNCTION marketplace_log_append_only()")
    with op.batch_alter_table("revocations") as batch:
        batch.drop_column("log_index")
    op.drop_table("log_head")
    op.drop_table("log_nodes")
    op.drop_table("log_entries")
