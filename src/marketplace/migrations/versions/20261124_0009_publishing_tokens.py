"""publishing tokens: named, scoped, expiring credentials for CI (issue 11)

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-24
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0009"
# 0007 and 0008 (release keys, takedowns) are chained in between at merge time.
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLE = "publishing_tokens"
_JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    op.create_table(
        TABLE,
        sa.Column("user_id", sa.String(length=36), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("scopes", _JSON, nullable=False),
        sa.Column("plugins", _JSON, nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_used_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("revoked_reason", sa.Text(), nullable=True),
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.CheckConstraint(
            "expires_at > created_at", name=op.f("ck_publishing_tokens_expires_after_creation")
        ),
        sa.CheckConstraint(
            "length(name) BETWEEN 1 AND 100", name=op.f("ck_publishing_tokens_name_length")
        ),
        sa.CheckConstraint(
            "(revoked_at IS NULL) = (revoked_reason IS NULL)",
            name=op.f("ck_publishing_tokens_revoked_with_reason"),
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_publishing_tokens_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_publishing_tokens")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_publishing_tokens_token_hash")),
    )
    op.create_index(op.f("ix_publishing_tokens_user_id"), TABLE, ["user_id"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_publishing_tokens_user_id"), table_name=TABLE)
    op.drop_table(TABLE)
