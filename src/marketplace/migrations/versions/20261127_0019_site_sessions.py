"""site sessions: a session belongs to one site, the console or the publisher portal

`console_sessions` gains `site` ('console' or 'portal', a CHECK): the portal's logins use
the console's table, expiry rules and sweeping, and a session opens only the site it was
started on. Existing rows are console sessions (the column's default). A plain ADD COLUMN
on both databases; on SQLite the check rides on the new column.

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-27
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SITE_VALID = "site IN ('console', 'portal')"


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute(
            "ALTER TABLE console_sessions ADD COLUMN site VARCHAR(16) DEFAULT 'console' "
            f"NOT NULL CONSTRAINT ck_console_sessions_site_valid CHECK ({SITE_VALID})"
        )
        return
    op.add_column(
        "console_sessions",
        sa.Column("site", sa.String(length=16), server_default="console", nullable=False),
    )
    op.create_check_constraint(
        op.f("ck_console_sessions_site_valid"), "console_sessions", SITE_VALID
    )


def downgrade() -> None:
    # The portal's sessions go: without the column they would open the console.
    op.execute("DELETE FROM console_sessions WHERE site <> 'console'")
    if op.get_bind().dialect.name == "sqlite":
        # The check is the column's own, so it goes with the column.
        op.execute("ALTER TABLE console_sessions DROP COLUMN site")
        return
    op.drop_constraint(op.f("ck_console_sessions_site_valid"), "console_sessions", type_="check")
    op.drop_column("console_sessions", "site")
