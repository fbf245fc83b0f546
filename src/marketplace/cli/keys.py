"""`marketplace keys list|rotate`: the service's release-signing keys (an operator command).

The keyring is the one the service uses, from the same settings: `MARKETPLACE_SIGNING_KEYS`
(inline JSON, scale-out) or `MARKETPLACE_SIGNING_KEYS_FILE`, else
`<MARKETPLACE_DATA_DIR>/signing-keys.json`. Rotating a file keyring rewrites the file; every
worker reading that file signs with the new key from its next signature on. A keyring held
in a setting cannot be written by anyone but the operator: `rotate` prints the new JSON to
store.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from marketplace_client.errors import CliError
from marketplace_client.options import JsonOption
from marketplace_client.output import Output, reporting_errors

# Server-side modules (settings, keyring) are imported inside the commands, as in server.py.
if TYPE_CHECKING:
    from marketplace.config import Settings

keys_app = typer.Typer(help="Release-signing keys (CONTRACT 11).", no_args_is_help=True)
SETTING = "MARKETPLACE_SIGNING_KEYS"


def register(app: typer.Typer) -> None:
    app.add_typer(keys_app, name="keys")


def _time(value: datetime | None) -> str | None:
    return None if value is None else value.strftime("%Y-%m-%dT%H:%M:%SZ")


def _keyring_error(exc: Exception) -> CliError:
    return CliError("KEYRING_INVALID", f"the signing keyring cannot be used: {exc}")


@keys_app.command("list")
def keys_list(json_output: JsonOption = False) -> None:
    """The signing keys (public part), oldest first; retired keys still verify old releases."""
    from marketplace.config import get_settings
    from marketplace.trust.keyring import Keyring, KeyringError

    out = Output(json_mode=json_output)
    with reporting_errors(out):
        settings = get_settings()
        try:
            keyring = Keyring.from_settings(settings)
            keys = keyring.keys()
            signing = keyring.signing_key().key_id
        except KeyringError as exc:
            raise _keyring_error(exc) from exc
    source = SETTING if keyring.path is None else str(keyring.path)
    items: list[dict[str, Any]] = [
        {
            **key.listing(),
            "createdAt": _time(key.created_at),
            "retiredAt": _time(key.retired_at),
            "signing": key.key_id == signing,
        }
        for key in keys
    ]

    def human() -> None:
        out.out.print(f"keyring: {source}", markup=False)
        for item in items:
            state = "signing" if item["signing"] else f"retired {item['retiredAt'] or '-'}"
            out.out.print(
                f"{item['keyId']}  {item['algorithm']}  created {item['createdAt']}  {state}",
                markup=False,
            )

    out.result({"source": source, "items": items}, human)


@keys_app.command("rotate")
def keys_rotate(json_output: JsonOption = False) -> None:
    """Add a new signing key and retire the current one (it stays listed, so releases it
    signed still verify). With the keyring in MARKETPLACE_SIGNING_KEYS, print the rotated
    keyring for the operator to store: the service cannot write a setting."""
    from marketplace.config import get_settings
    from marketplace.trust.keyring import (
        KeyringError,
        keyring_path,
        parse_keyring,
        rotate_file,
        rotate_inline,
    )

    out = Output(json_mode=json_output)
    with reporting_errors(out):
        settings = get_settings()
        try:
            if settings.signing_keys is not None:
                current = settings.signing_keys.get_secret_value()
                text, fresh = rotate_inline(current)
                retired = [k.key_id for k in parse_keyring(current) if k.retired_at is None]
                path = None
            else:
                path = keyring_path(settings)
                fresh, old = rotate_file(path)
                retired = [key.key_id for key in old]
                text = None
        except KeyringError as exc:
            raise _keyring_error(exc) from exc
    if text is not None or path is None:
        _print_inline(out, text or "", fresh.key_id, retired)
        return
    logged = _log_key_changes(settings, path)
    data = {
        "source": str(path),
        "keyId": fresh.key_id,
        "retired": retired,
        "keyring": None,
        "logIndexes": logged,
    }

    def human() -> None:
        out.out.print(
            f"new signing key {fresh.key_id} in {path}; retired {', '.join(retired) or 'none'}",
            markup=False,
        )
        out.step(
            "Workers reading this file sign with the new key from now on; every host must "
            "share this one file (or use MARKETPLACE_SIGNING_KEYS)."
        )
        if logged is None:
            out.step(
                "The database could not be reached: the transparency log records the new "
                "key before the key signs its first approval."
            )
        else:
            out.step(f"Transparency log: key entries {', '.join(map(str, logged)) or 'none'}")

    out.result(data, human)


def _log_key_changes(settings: Settings, path: Path) -> list[int] | None:
    """The rotation's key-add and key-retire entries in the transparency log (CONTRACT 15),
    appended now; None when the database cannot take them (not reachable, not migrated): the
    service appends them before the new key signs anything."""
    import asyncio

    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import SQLAlchemyError

    from marketplace.db import make_engine, make_sessionmaker
    from marketplace.transparency.log import record_key_changes
    from marketplace.trust.keyring import Keyring

    async def append() -> list[int]:
        engine = make_engine(settings.database_url, pool_size=1)
        try:
            async with make_sessionmaker(engine, write=True).begin() as session:
                return await record_key_changes(session, Keyring(path=path).keys())
        finally:
            await engine.dispose()

    database = make_url(settings.database_url).database
    if settings.is_sqlite and database and database != ":memory:":
        if not Path(database).is_file():
            return None  # no database yet: never create an empty one here
    try:
        return asyncio.run(append())
    except (SQLAlchemyError, OSError):
        return None


def _print_inline(out: Output, text: str, key_id: str, retired: list[str]) -> None:
    """The keyring lives in a setting: hand the rotated JSON to the operator to store."""
    notice = (
        f"{SETTING} holds the keyring and the service cannot write a setting: nothing was "
        f"changed. Store the JSON below as {SETTING} on every host, then restart them; "
        f"the new signing key is {key_id}."
    )
    if out.json_mode:
        out.step(notice)
        out.emit_json(
            {
                "success": True,
                "data": {"source": SETTING, "keyId": key_id, "retired": retired, "keyring": text},
            }
        )
        return
    out.step(notice)
    typer.echo(text, nl=False)
