"""scenarios and scenario versions

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "scenarios",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("owner_id", sa.String(length=36), nullable=False),
        sa.Column("version", sa.String(length=100), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("name_zh", sa.String(length=200), nullable=True),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("description_zh", sa.Text(), nullable=True),
        sa.Column("type", sa.String(length=32), nullable=False),
        sa.Column("category", sa.String(length=64), nullable=False),
        sa.Column(
            "permissions",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("changelog", sa.Text(), nullable=True),
        sa.Column("sha256", sa.String(length=64), nullable=True),
        sa.Column("size", sa.BigInteger(), nullable=True),
        sa.Column("review_status", sa.String(length=20), nullable=False),
        sa.Column("latest_version", sa.String(length=100), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "review_status IN ('pending', 'approved', 'rejected', 'taken_down')",
            name=op.f("ck_scenarios_review_status_valid"),
        ),
        sa.CheckConstraint("length(id) BETWEEN 3 AND 64", name=op.f("ck_scenarios_id_length")),
        sa.ForeignKeyConstraint(
            ["category"],
            ["categories.key"],
            name=op.f("fk_scenarios_category_categories"),
            ondelete="RESTRICT",
        ),
        sa.ForeignKeyConstraint(
            ["owner_id"],
            ["users.id"],
            name=op.f("fk_scenarios_owner_id_users"),
            ondelete="RESTRICT",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_scenarios")),
    )
    with op.batch_alter_table("scenarios", schema=None) as batch_op:
        batch_op.create_index("ix_scenarios_category", ["category"], unique=False)
        batch_op.create_index("ix_scenarios_owner_id", ["owner_id", "created_at"], unique=False)
        batch_op.create_index("ix_scenarios_review_status", ["review_status"], unique=False)

    op.create_table(
        "scenario_versions",
        sa.Column("scenario_id", sa.String(length=64), nullable=False),
        sa.Column("version", sa.String(length=100), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("name_zh", sa.String(length=200), nullable=True),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("description_zh", sa.Text(), nullable=True),
        sa.Column("type", sa.String(length=32), nullable=False),
        sa.Column("category", sa.String(length=64), nullable=False),
        sa.Column(
            "permissions",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("changelog", sa.Text(), nullable=True),
        sa.Column("sha256", sa.String(length=64), nullable=True),
        sa.Column("size", sa.BigInteger(), nullable=True),
        sa.Column("blob_key", sa.String(length=200), nullable=True),
        sa.Column("is_latest", sa.Boolean(), nullable=False),
        sa.Column("review_status", sa.String(length=20), nullable=False),
        sa.Column("review_note", sa.Text(), nullable=True),
        sa.Column("reviewed_by", sa.String(length=36), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.CheckConstraint(
            "NOT is_latest OR review_status = 'approved'",
            name=op.f("ck_scenario_versions_latest_is_approved"),
        ),
        sa.CheckConstraint(
            "review_status IN ('pending', 'approved', 'rejected', 'taken_down')",
            name=op.f("ck_scenario_versions_review_status_valid"),
        ),
        sa.ForeignKeyConstraint(
            ["category"],
            ["categories.key"],
            name=op.f("fk_scenario_versions_category_categories"),
            ondelete="RESTRICT",
        ),
        sa.ForeignKeyConstraint(
            ["scenario_id"],
            ["scenarios.id"],
            name=op.f("fk_scenario_versions_scenario_id_scenarios"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_scenario_versions")),
        sa.UniqueConstraint(
            "scenario_id", "version", name=op.f("uq_scenario_versions_scenario_id_version")
        ),
    )
    with op.batch_alter_table("scenario_versions", schema=None) as batch_op:
        batch_op.create_index("ix_scenario_versions_blob_key", ["blob_key"], unique=False)
        batch_op.create_index(
            "ix_scenario_versions_review_status", ["review_status", "created_at"], unique=False
        )
        batch_op.create_index(
            "uq_scenario_versions_one_latest",
            ["scenario_id"],
            unique=True,
            sqlite_where=sa.text("is_latest"),
            postgresql_where=sa.text("is_latest"),
        )


def downgrade() -> None:
    with op.batch_alter_table("scenario_versions", schema=None) as batch_op:
        batch_op.drop_index(
            "uq_scenario_versions_one_latest",
            sqlite_where=sa.text("is_latest"),
            postgresql_where=sa.text("is_latest"),
        )
        batch_op.drop_index("ix_scenario_versions_review_status")
        batch_op.drop_index("ix_scenario_versions_blob_key")

    op.drop_table("scenario_versions")
    with op.batch_alter_table("scenarios", schema=None) as batch_op:
        batch_op.drop_index("ix_scenarios_review_status")
        batch_op.drop_index("ix_scenarios_owner_id")
        batch_op.drop_index("ix_scenarios_category")

    op.drop_table("scenarios")
