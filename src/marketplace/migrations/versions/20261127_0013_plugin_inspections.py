"""plugin_inspections: each stdio MCP version's inspection, job state and report (CONTRACT 13)

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-27
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "plugin_inspections",
        sa.Column("version_id", sa.String(length=36), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("lease_token", sa.String(length=36), nullable=True),
        sa.Column("lease_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("queued_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column(
            "report",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.CheckConstraint(
            "status IN ('queued', 'running', 'done', 'failed')",
            name=op.f("ck_plugin_inspections_status_valid"),
        ),
        sa.CheckConstraint(
            "attempts >= 0 AND attempts <= 3", name=op.f("ck_plugin_inspections_attempts_bounded")
        ),
        sa.ForeignKeyConstraint(
            ["version_id"],
            ["plugin_versions.id"],
            name=op.f("fk_plugin_inspections_version_id_plugin_versions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("version_id", name=op.f("pk_plugin_inspections")),
    )
    op.create_index(
        "ix_plugin_inspections_status_lease", "plugin_inspections", ["status", "lease_until"]
    )


def downgrade() -> None:
    op.drop_index("ix_plugin_inspections_status_lease", table_name="plugin_inspections")
    op.drop_table("plugin_inspections")
