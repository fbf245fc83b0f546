"""refresh token families: a replayed refresh token revokes its family

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-24
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLE = "refresh_tokens"
INDEX = "ix_refresh_tokens_family_id"


def upgrade() -> None:
    # No batch mode: it would rebuild SQLite tables and lose their expression indexes.
    if op.get_context().dialect.name == "sqlite":
        # SQLite adds a NOT NULL column only with a default, and cannot drop the default
        # afterwards without rebuilding the table. The default is never used: the service
        # always sets family_id, and every existing row is backfilled below.
        op.add_column(
            TABLE,
            sa.Column("family_id", sa.String(length=36), nullable=False, server_default=""),
        )
        op.execute(sa.text("UPDATE refresh_tokens SET family_id = id"))
    else:
        op.add_column(TABLE, sa.Column("family_id", sa.String(length=36), nullable=True))
        # Each existing token is a family of its own.
        op.execute(sa.text("UPDATE refresh_tokens SET family_id = id"))
        op.alter_column(TABLE, "family_id", nullable=False)
    op.create_index(INDEX, TABLE, ["family_id"], unique=False)


def downgrade() -> None:
    op.drop_index(INDEX, table_name=TABLE)
    # SQLite 3.35+ drops a plain column in place (no index or constraint refers to it now).
    op.drop_column(TABLE, "family_id")
