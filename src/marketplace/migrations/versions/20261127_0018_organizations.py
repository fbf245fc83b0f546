# ruff: noqa: S608 - DDL assembled from constant fragments; no input reaches it
"""organizations: members, and plugins that belong to one (CONTRACT 17)

- `organizations` (slug unique) and `organization_members` (one row per member, role
  `owner` or `member` as a CHECK; looked up by user through its index).
- `plugins.org_id`, nullable, referencing the organization. Plain ADD COLUMN on both
  databases (batch mode would rebuild the SQLite table and lose its triggers and
  expression indexes); on SQLite the foreign key rides on the new column. Its action is
  the default (NO ACTION: an organization with plugins cannot be deleted), as SQLite reflects
  no ON DELETE from a column's own REFERENCES clause.
- SQLite's plugins trigger learns the new column: a transfer changes what the public reads
  show (`org`), so it moves the listing generation (migration 0016 lists the columns;
  PostgreSQL's trigger compares whole rows and needs nothing).

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-27
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Migration 0017's columns plus the new one: a change to any moves the listing generation.
PLUGIN_LISTING_COLUMNS = (
    "plugin_key", "name", "name_zh", "description", "description_zh", "type", "category",
    "is_free", "price", "validity_days", "tags", "license", "homepage", "repository", "icon",
    "source", "platforms", "featured", "enabled", "review_status", "review_note",
    "reviewed_by", "latest_version", "owner_id", "id", "created_at", "latest_prerelease",
    "org_id",
)  # fmt: skip
COUNTERS = ("download_count", "rating_count", "rating_sum", "updated_at")
ORG_FK = "fk_plugins_org_id_organizations"


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


def upgrade() -> None:
    op.create_table(
        "organizations",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("slug", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("created_by", sa.String(length=36), nullable=False),
        sa.ForeignKeyConstraint(
            ["created_by"], ["users.id"],
            name=op.f("fk_organizations_created_by_users"), ondelete="RESTRICT",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_organizations")),
        sa.UniqueConstraint("slug", name=op.f("uq_organizations_slug")),
    )  # fmt: skip
    op.create_table(
        "organization_members",
        sa.Column("org_id", sa.String(length=36), nullable=False),
        sa.Column("user_id", sa.String(length=36), nullable=False),
        sa.Column("role", sa.String(length=20), nullable=False),
        sa.Column("added_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "role IN ('owner', 'member')", name=op.f("ck_organization_members_role_valid")
        ),
        sa.ForeignKeyConstraint(
            ["org_id"], ["organizations.id"],
            name=op.f("fk_organization_members_org_id_organizations"), ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"],
            name=op.f("fk_organization_members_user_id_users"), ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("org_id", "user_id", name=op.f("pk_organization_members")),
    )  # fmt: skip
    op.create_index("ix_organization_members_user_id", "organization_members", ["user_id"])
    if op.get_bind().dialect.name == "sqlite":
        op.execute(
            f"ALTER TABLE plugins ADD COLUMN org_id VARCHAR(36) CONSTRAINT {ORG_FK} "
            "REFERENCES organizations (id)"
        )
        _sqlite_plugins_trigger(PLUGIN_LISTING_COLUMNS)
    else:
        op.add_column("plugins", sa.Column("org_id", sa.String(length=36), nullable=True))
        op.create_foreign_key(op.f(ORG_FK), "plugins", "organizations", ["org_id"], ["id"])
    op.create_index("ix_plugins_org_id", "plugins", ["org_id"])


def downgrade() -> None:
    op.drop_index("ix_plugins_org_id", table_name="plugins")
    if op.get_bind().dialect.name == "sqlite":
        _sqlite_plugins_trigger(PLUGIN_LISTING_COLUMNS[:-1])
        # SQLite drops a column only when nothing names it: the foreign key goes with it.
        op.execute("ALTER TABLE plugins DROP COLUMN org_id")
    else:
        op.drop_constraint(op.f(ORG_FK), "plugins", type_="foreignkey")
        op.drop_column("plugins", "org_id")
    op.drop_index("ix_organization_members_user_id", table_name="organization_members")
    op.drop_table("organization_members")
    op.drop_table("organizations")
