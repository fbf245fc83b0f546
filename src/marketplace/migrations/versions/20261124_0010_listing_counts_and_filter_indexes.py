# ruff: noqa: S608 - DDL assembled from constant fragments; no input reaches it
"""listed-plugin counts per filter combination, filter + sort indexes (issue 14)

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-24

catalog_listing_counts   the number of listed plugins (approved and enabled) per
                         (category, type, is_free), kept by triggers on plugins on both
                         databases, so every writer keeps it right. The exact browse total
                         without q (CONTRACT 6) and the category counts are then a sum over
                         at most categories x 7 types x 2 rows, whatever the catalogue size.
ix_plugins_listed_<filter>_<sort>
                         partial indexes (listed plugins only) leading with one filter
                         column, then the sort's columns: browse with a category, a type or
                         isFree and any sort walks one index in order and stops at the page.
                         (category, popular) is 0002's ix_plugins_listed_category.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

LISTED = "review_status = 'approved' AND enabled"

# The sort columns of 0002's SORT_INDEXES (and of catalog.service.ORDERS).
SORTS = {
    "popular": "download_count DESC, id DESC",
    "newest": "created_at DESC, id DESC",
    "updated": "updated_at DESC, id DESC",
    "name": "lower(name), id",
    "rating": (
        "(CASE WHEN rating_count > 0 THEN rating_sum * 1.0 / rating_count ELSE 0 END) DESC, "
        "rating_count DESC, id DESC"
    ),
}
FILTERS = {"category": "category", "type": "type", "free": "is_free"}


def filter_indexes() -> dict[str, str]:
    indexes = {}
    for name, column in FILTERS.items():
        for sort, columns in SORTS.items():
            if (name, sort) != ("category", "popular"):  # 0002 made that one
                indexes[f"ix_plugins_listed_{name}_{sort}"] = f"{column}, {columns}"
    return indexes


COUNT_KEY = "category = {row}.category AND type = {row}.type AND is_free = {row}.is_free"


def upgrade() -> None:
    op.create_table(
        "catalog_listing_counts",
        sa.Column("category", sa.String(length=64), nullable=False),
        sa.Column("type", sa.String(length=20), nullable=False),
        sa.Column("is_free", sa.Boolean(), nullable=False),
        sa.Column("listed", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint(
            "category", "type", "is_free", name=op.f("pk_catalog_listing_counts")
        ),
    )
    dialect = op.get_bind().dialect.name
    if dialect == "sqlite":
        _sqlite_triggers()
    else:
        _postgresql_triggers()
    op.execute(
        "INSERT INTO catalog_listing_counts (category, type, is_free, listed) "
        f"SELECT category, type, is_free, count(*) FROM plugins WHERE {LISTED} "
        "GROUP BY category, type, is_free"
    )
    for name, columns in filter_indexes().items():
        op.execute(f"CREATE INDEX {name} ON plugins ({columns}) WHERE {LISTED}")


def downgrade() -> None:
    for name in reversed(filter_indexes()):
        op.execute(f"DROP INDEX {name}")
    if op.get_bind().dialect.name == "sqlite":
        for trigger in ("insert", "update", "delete"):
            op.execute(f"DROP TRIGGER plugins_listing_counts_{trigger}")
    else:
        op.execute("DROP TRIGGER plugins_listing_counts ON plugins")
        op.execute("DROP FUNCTION marketplace_listing_counts()")
    op.drop_table("catalog_listing_counts")


def _add(row: str) -> str:
    # INSERT ... SELECT needs its WHERE before ON CONFLICT (SQLite's parsing rule).
    return (
        "INSERT INTO catalog_listing_counts (category, type, is_free, listed) "
        f"SELECT {row}.category, {row}.type, {row}.is_free, 1 "
        f"WHERE {row}.review_status = 'approved' AND {row}.enabled "
        "ON CONFLICT (category, type, is_free) DO UPDATE SET listed = listed + 1; "
    )


def _remove(row: str) -> str:
    return (
        "UPDATE catalog_listing_counts SET listed = listed - 1 "
        f"WHERE {COUNT_KEY.format(row=row)} "
        f"AND {row}.review_status = 'approved' AND {row}.enabled; "
    )


def _sqlite_triggers() -> None:
    op.execute(
        f"CREATE TRIGGER plugins_listing_counts_insert AFTER INSERT ON plugins BEGIN "
        f"{_add('new')}END"
    )
    op.execute(
        "CREATE TRIGGER plugins_listing_counts_update AFTER UPDATE OF "
        "review_status, enabled, category, type, is_free ON plugins BEGIN "
        f"{_remove('old')}{_add('new')}END"
    )
    op.execute(
        f"CREATE TRIGGER plugins_listing_counts_delete AFTER DELETE ON plugins BEGIN "
        f"{_remove('old')}END"
    )


def _postgresql_triggers() -> None:
    # A change that keeps the plugin in its bucket touches nothing. One that moves it
    # locks both bucket rows in key order first: two writers moving plugins between the
    # same two buckets in opposite directions would otherwise each hold one row and wait
    # for the other's (a deadlock, answered as an error to one of them).
    op.execute(
        "CREATE FUNCTION marketplace_listing_counts() RETURNS trigger LANGUAGE plpgsql AS $$ "
        "DECLARE "
        "old_in boolean := TG_OP IN ('UPDATE', 'DELETE') "
        "AND OLD.review_status = 'approved' AND OLD.enabled; "
        "new_in boolean := TG_OP IN ('INSERT', 'UPDATE') "
        "AND NEW.review_status = 'approved' AND NEW.enabled; "
        "BEGIN "
        "old_in := coalesce(old_in, false); new_in := coalesce(new_in, false); "
        "IF old_in AND new_in AND OLD.category = NEW.category AND OLD.type = NEW.type "
        "AND OLD.is_free = NEW.is_free THEN RETURN NULL; END IF; "
        "IF new_in THEN "
        "INSERT INTO catalog_listing_counts (category, type, is_free, listed) "
        "VALUES (NEW.category, NEW.type, NEW.is_free, 0) "
        "ON CONFLICT (category, type, is_free) DO NOTHING; "
        "END IF; "
        "PERFORM 1 FROM catalog_listing_counts c WHERE "
        "(old_in AND c.category = OLD.category AND c.type = OLD.type "
        "AND c.is_free = OLD.is_free) OR "
        "(new_in AND c.category = NEW.category AND c.type = NEW.type "
        "AND c.is_free = NEW.is_free) "
        "ORDER BY c.category, c.type, c.is_free FOR UPDATE; "
        "IF old_in THEN UPDATE catalog_listing_counts SET listed = listed - 1 "
        "WHERE category = OLD.category AND type = OLD.type AND is_free = OLD.is_free; "
        "END IF; "
        "IF new_in THEN UPDATE catalog_listing_counts SET listed = listed + 1 "
        "WHERE category = NEW.category AND type = NEW.type AND is_free = NEW.is_free; "
        "END IF; "
        "RETURN NULL; "
        "END $$"
    )
    op.execute(
        "CREATE TRIGGER plugins_listing_counts AFTER INSERT OR DELETE OR UPDATE OF "
        "review_status, enabled, category, type, is_free ON plugins "
        "FOR EACH ROW EXECUTE FUNCTION marketplace_listing_counts()"
    )
