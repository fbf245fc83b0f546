"""release records and takedown times on every reviewed version (CONTRACT 11)

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-24
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TABLES = {"plugin_versions": "plugin_version", "scenario_versions": "scenario_version"}


def upgrade() -> None:
    # Plain ADD COLUMN on both databases: batch mode would rebuild the SQLite tables and lose
    # their expression indexes. 'taken_down' is already a valid reviewStatus (items use it).
    for table, resource in _TABLES.items():
        op.add_column(table, sa.Column("approved_at", sa.DateTime(timezone=True), nullable=True))
        op.add_column(
            table,
            sa.Column(
                "release",
                sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
                nullable=True,
            ),
        )
        op.add_column(table, sa.Column("taken_down_at", sa.DateTime(timezone=True), nullable=True))
        # Versions approved before this revision: the time of their approval's audit record,
        # or their upload time when the record is gone. Their release is signed on first use.
        versions = sa.table(
            table,
            sa.column("id"),
            sa.column("created_at"),
            sa.column("approved_at"),
            sa.column("review_status"),
        )
        audit = sa.table(
            "audit_logs",
            sa.column("created_at"),
            sa.column("resource_type"),
            sa.column("resource_id"),
            sa.column("action"),
        )
        approval = (
            sa.select(sa.func.max(audit.c.created_at))
            .where(
                audit.c.resource_type == resource,
                audit.c.resource_id == versions.c.id,
                audit.c.action == "REVIEW_APPROVE",
            )
            .scalar_subquery()
        )
        op.execute(
            versions.update()
            .where(versions.c.review_status == "approved")
            .values(approved_at=sa.func.coalesce(approval, versions.c.created_at))
        )


def downgrade() -> None:
    for table in _TABLES:
        op.drop_column(table, "taken_down_at")
        op.drop_column(table, "release")
        op.drop_column(table, "approved_at")
