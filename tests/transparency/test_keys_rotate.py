"""`marketplace keys rotate` appends the rotation to the transparency log at once."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Connection, select
from typer.testing import CliRunner

from marketplace.config import get_settings
from marketplace.models import LogEntry
from marketplace.trust.keyring import parse_keyring
from marketplace_client.main import app
from tests.cli.helpers import stdout_json
from tests.migrations import run_now


@pytest.fixture
def configured(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, database_url: str
) -> Iterator[Path]:
    folder = tmp_path / "data"
    monkeypatch.setenv("MARKETPLACE_DATA_DIR", str(folder))
    monkeypatch.setenv("MARKETPLACE_DATABASE_URL", database_url)
    for name in ("MARKETPLACE_SIGNING_KEYS", "MARKETPLACE_SIGNING_KEYS_FILE"):
        monkeypatch.delenv(name, raising=False)
    get_settings.cache_clear()
    yield folder
    get_settings.cache_clear()


def test_rotate_appends_the_new_key_and_the_retirement(configured: Path, database_url: str) -> None:
    result = CliRunner().invoke(app, ["keys", "rotate", "--json"])

    assert result.exit_code == 0, result.output
    data = stdout_json(result)["data"]
    old, new = parse_keyring((configured / "signing-keys.json").read_text())
    assert data["keyId"] == new.key_id

    def read(connection: Connection) -> list[tuple[int, bytes]]:
        query = select(LogEntry.log_index, LogEntry.leaf).where(
            LogEntry.log_index.in_(data["logIndexes"])
        )
        return [(row.log_index, row.leaf) for row in connection.execute(query)]

    logged = [json.loads(leaf) for _, leaf in sorted(run_now(database_url, read))]
    assert [(e["action"], e["keyId"]) for e in logged] == [
        ("key-add", old.key_id),
        ("key-add", new.key_id),
        ("key-retire", old.key_id),
    ]
    again = CliRunner().invoke(app, ["keys", "list"])
    assert again.exit_code == 0


def test_rotate_without_a_database_still_rotates_and_says_so(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("MARKETPLACE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("MARKETPLACE_DATABASE_URL", raising=False)
    for name in ("MARKETPLACE_SIGNING_KEYS", "MARKETPLACE_SIGNING_KEYS_FILE"):
        monkeypatch.delenv(name, raising=False)
    get_settings.cache_clear()
    try:
        result = CliRunner().invoke(app, ["keys", "rotate"])
    finally:
        get_settings.cache_clear()
    assert result.exit_code == 0, result.output
    assert "records the new key before the key signs" in result.output
    assert not (tmp_path / "data" / "marketplace.db").exists()
    assert len(parse_keyring((tmp_path / "data" / "signing-keys.json").read_text())) == 2
