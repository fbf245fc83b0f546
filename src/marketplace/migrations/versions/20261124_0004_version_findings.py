"""findings of the automatic checks on every reviewed version

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-24
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TABLES = ("plugin_versions", "scenario_versions")


def upgrade() -> None:
    # A plain ADD COLUMN on both databases: batch mode would rebuild the SQLite tables and
    # lose their expression indexes, which it cannot reflect.
    for table in _TABLES:
        op.add_column(
            table,
            sa.Column(
                "findings",
                sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
                nullable=False,
                server_default=sa.text("'[]'"),
            ),
        )


def downgrade() -> None:
    for table in _TABLES:
        op.drop_column(table, "findings")
