"""revocations: one row per version ever taken down, outliving the version (CONTRACT 11)

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-24
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "revocations",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("version_id", sa.String(length=36), nullable=False),
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("version", sa.String(length=100), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=True),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_revocations")),
        sa.UniqueConstraint("kind", "version_id", name=op.f("uq_revocations_kind_version_id")),
    )
    op.create_index("ix_revocations_revoked_at", "revocations", ["revoked_at", "id"])


def downgrade() -> None:
    op.drop_index("ix_revocations_revoked_at", table_name="revocations")
    op.drop_table("revocations")
