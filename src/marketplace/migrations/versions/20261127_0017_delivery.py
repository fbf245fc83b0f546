# ruff: noqa: S608 - DDL assembled from constant fragments; no input reaches it
"""delivery: channels, staged rollouts, client signals and statistics counters (CONTRACT 16)

- `plugin_versions` gains `channel` and the rollout (`rollout_percent`, `rollout_state`,
  `rollout_halted_reason`, `rollout_updated_at`), with their rules as CHECK constraints;
  `plugins` gains `latest_prerelease`. Plain ADD COLUMN on both databases (batch mode would
  rebuild the SQLite tables and lose their triggers and expression indexes); on SQLite the
  checks ride on the new columns.
- `plugin_signals` holds one signal per user, plugin, version and kind a day (a unique
  constraint); `plugin_daily_stats` and `plugin_version_stats` are the counters statistics
  read, kept in each event's transaction.
- SQLite's plugins trigger learns the new column (migration 0016 lists the columns that
  move the listing generation; PostgreSQL's compares whole rows).

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-27
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

VERSION_CHECKS = {
    "channel_valid": "channel IN ('stable', 'prerelease')",
    "rollout_state_valid": "rollout_state IN ('full', 'rolling', 'halted')",
    "rollout_percent_range": "rollout_percent BETWEEN 1 AND 100",
    "rollout_full_is_100": "(rollout_state = 'full') = (rollout_percent = 100)",
    "prerelease_not_rolled": "channel = 'stable' OR rollout_state = 'full'",
    "latest_is_stable": "NOT is_latest OR channel = 'stable'",
}
# Migration 0016's columns plus the new one: a change to any moves the listing generation.
PLUGIN_LISTING_COLUMNS = (
    "plugin_key", "name", "name_zh", "description", "description_zh", "type", "category",
    "is_free", "price", "validity_days", "tags", "license", "homepage", "repository", "icon",
    "source", "platforms", "featured", "enabled", "review_status", "review_note",
    "reviewed_by", "latest_version", "owner_id", "id", "created_at", "latest_prerelease",
)  # fmt: skip
COUNTERS = ("download_count", "rating_count", "rating_sum", "updated_at")


def _differs(columns: Sequence[str]) -> str:
    return " OR ".join(f"OLD.{c} IS NOT NEW.{c}" for c in columns)


def _sqlite_plugins_trigger(listing_columns: Sequence[str]) -> None:
    listing_changed = _differs(listing_columns)
    op.execute("DROP TRIGGER plugins_changed_update")
    op.execute(
        "CREATE TRIGGER plugins_changed_update AFTER UPDATE ON plugins "
        f"WHEN {_differs((*listing_columns, *COUNTERS))} BEGIN "
        "INSERT INTO plugin_search_changes (plugin_id) VALUES (NEW.id);"
        "INSERT INTO catalog_generation (id, generation, listing_generation) VALUES (1, 1, 1) "
        "ON CONFLICT (id) DO UPDATE SET generation = generation + 1, "
        "listing_generation = listing_generation + "
        f"(CASE WHEN {listing_changed} THEN 1 ELSE 0 END); END"
    )


def _version_columns() -> None:
    if op.get_bind().dialect.name == "sqlite":
        checks = {
            name: f"CONSTRAINT ck_plugin_versions_{name} CHECK ({sql})"
            for name, sql in VERSION_CHECKS.items()
        }
        for ddl in (
            f"channel VARCHAR(20) DEFAULT 'stable' NOT NULL {checks['channel_valid']} "
            f"{checks['latest_is_stable']}",
            f"rollout_percent INTEGER DEFAULT 100 NOT NULL {checks['rollout_percent_range']}",
            f"rollout_state VARCHAR(20) DEFAULT 'full' NOT NULL {checks['rollout_state_valid']} "
            f"{checks['rollout_full_is_100']} {checks['prerelease_not_rolled']}",
            "rollout_halted_reason TEXT",
            "rollout_updated_at DATETIME",
        ):
            op.execute(f"ALTER TABLE plugin_versions ADD COLUMN {ddl}")
        op.execute("ALTER TABLE plugins ADD COLUMN latest_prerelease VARCHAR(100)")
        _sqlite_plugins_trigger(PLUGIN_LISTING_COLUMNS)
        return
    op.add_column(
        "plugin_versions",
        sa.Column("channel", sa.String(length=20), server_default="stable", nullable=False),
    )
    op.add_column(
        "plugin_versions",
        sa.Column("rollout_percent", sa.Integer(), server_default=sa.text("100"), nullable=False),
    )
    op.add_column(
        "plugin_versions",
        sa.Column("rollout_state", sa.String(length=20), server_default="full", nullable=False),
    )
    op.add_column("plugin_versions", sa.Column("rollout_halted_reason", sa.Text(), nullable=True))
    op.add_column(
        "plugin_versions",
        sa.Column("rollout_updated_at", sa.DateTime(timezone=True), nullable=True),
    )
    for name, sql in VERSION_CHECKS.items():
        op.create_check_constraint(op.f(f"ck_plugin_versions_{name}"), "plugin_versions", sql)
    op.add_column("plugins", sa.Column("latest_prerelease", sa.String(length=100), nullable=True))


def _counter(name: str) -> sa.Column[int]:
    return sa.Column(name, sa.Integer(), server_default=sa.text("0"), nullable=False)


def _plugin_fk(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["plugin_id"],
        ["plugins.id"],
        name=op.f(f"fk_{table}_plugin_id_plugins"),
        ondelete="CASCADE",
    )


# The update check reads up to 500 plugins by key, with their offerable versions: from
# these indexes alone, a cold check of 200 plugins at 100,000 reads 1 ms of pages instead
# of 6 (the rows are wide: descriptions, manifests, release records).
DELIVERY_INDEXES = {
    "ix_plugins_delivery": (
        "plugins",
        ["plugin_key", "review_status", "enabled", "latest_version", "id"],
    ),
    "ix_plugin_versions_delivery": (
        "plugin_versions",
        ["plugin_id", "review_status", "version", "channel", "rollout_state", "rollout_percent"],
    ),
}


def upgrade() -> None:
    _version_columns()
    for name, (table, columns) in DELIVERY_INDEXES.items():
        op.create_index(name, table, columns)
    op.create_table(
        "plugin_signals",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("user_id", sa.String(length=36), nullable=False),
        sa.Column("plugin_id", sa.String(length=36), nullable=False),
        sa.Column("version", sa.String(length=100), nullable=False),
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("message", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "kind IN ('install', 'uninstall', 'crash', 'abuse')",
            name=op.f("ck_plugin_signals_kind_valid"),
        ),
        _plugin_fk("plugin_signals"),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"],
            name=op.f("fk_plugin_signals_user_id_users"), ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_plugin_signals")),
        sa.UniqueConstraint(
            "user_id", "plugin_id", "version", "kind", "day",
            name=op.f("uq_plugin_signals_user_id_plugin_id_version_kind_day"),
        ),
    )  # fmt: skip
    op.create_index("ix_plugin_signals_plugin_day", "plugin_signals", ["plugin_id", "day"])
    op.create_table(
        "plugin_daily_stats",
        sa.Column("plugin_id", sa.String(length=36), nullable=False),
        sa.Column("day", sa.Date(), nullable=False),
        *(
            _counter(name)
            for name in (
                "installs", "uninstalls", "downloads", "crash_reports", "abuse_reports", "purchases"
            )
        ),
        sa.Column("revenue", sa.Numeric(14, 2), server_default=sa.text("0"), nullable=False),
        _plugin_fk("plugin_daily_stats"),
        sa.PrimaryKeyConstraint("plugin_id", "day", name=op.f("pk_plugin_daily_stats")),
    )  # fmt: skip
    op.create_table(
        "plugin_version_stats",
        sa.Column("plugin_id", sa.String(length=36), nullable=False),
        sa.Column("version", sa.String(length=100), nullable=False),
        *(
            _counter(name)
            for name in (
                "installs",
                "uninstalls",
                "crash_reports",
                "crash_users",
                "abuse_reports",
                "judged_installs",
                "judged_uninstalls",
                "judged_crash_users",
            )
        ),
        _plugin_fk("plugin_version_stats"),
        sa.PrimaryKeyConstraint("plugin_id", "version", name=op.f("pk_plugin_version_stats")),
    )


def downgrade() -> None:
    for name, (table, _columns) in DELIVERY_INDEXES.items():
        op.drop_index(name, table_name=table)
    op.drop_table("plugin_version_stats")
    op.drop_table("plugin_daily_stats")
    op.drop_index("ix_plugin_signals_plugin_day", table_name="plugin_signals")
    op.drop_table("plugin_signals")
    if op.get_bind().dialect.name == "sqlite":
        _sqlite_plugins_trigger(PLUGIN_LISTING_COLUMNS[:-1])
        # SQLite drops a column only when nothing names it: the checks go with the column.
        for column in (
            "rollout_updated_at", "rollout_halted_reason", "rollout_state", "rollout_percent",
            "channel",
        ):  # fmt: skip
            op.execute(f"ALTER TABLE plugin_versions DROP COLUMN {column}")
        op.execute("ALTER TABLE plugins DROP COLUMN latest_prerelease")
        return
    for name in VERSION_CHECKS:
        op.drop_constraint(op.f(f"ck_plugin_versions_{name}"), "plugin_versions", type_="check")
    for column in (
        "rollout_updated_at", "rollout_halted_reason", "rollout_state", "rollout_percent", "channel"
    ):  # fmt: skip
        op.drop_column("plugin_versions", column)
    op.drop_column("plugins", "latest_prerelease")
