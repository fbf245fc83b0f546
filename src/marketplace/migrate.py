"""Run Alembic migrations programmatically (the only way the schema is made)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory

MIGRATIONS = Path(__file__).parent / "migrations"


def alembic_config(database_url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", database_url)
    config.set_main_option("file_template", "%%(year)d%%(month).2d%%(day).2d_%%(rev)s_%%(slug)s")
    return config


def upgrade(database_url: str, revision: str = "head") -> None:
    if database_url.startswith("sqlite"):
        # The data folder must exist before SQLite can create its file.
        path = database_url.split("///", 1)[-1]
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
    command.upgrade(alembic_config(database_url), revision)


def head_revision() -> str:
    """The revision `upgrade` reaches: what a ready database must be at."""
    head = ScriptDirectory.from_config(alembic_config("")).get_current_head()
    if head is None:  # unreachable: the tree has migrations
        raise RuntimeError("no migrations found")
    return head
