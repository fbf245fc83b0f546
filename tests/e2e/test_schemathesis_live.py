"""Fault suite: schemathesis over `/openapi.json` against the real server (the scaled-out
topology on the PostgreSQL run), with every one of its checks, not only "no 5xx": status
codes, content types, response schemas and headers as documented, schema-valid data
accepted, invalid data refused, authentication not ignored; and every 4xx error code
answered is one its operation lists (`x-error-codes`) for that status.

Examples are bounded (a fixed seed, derandomized, a few per operation and mode), so the
run is repeatable and takes about a minute.
"""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis.errors import Unsatisfiable
from schemathesis import Case, GenerationMode
from schemathesis.errors import FailureGroup

from tests.e2e.market import Market, write_plugin
from tests.review.test_schemathesis import _collect

pytestmark = [pytest.mark.e2e, pytest.mark.fault]

# Path parameters no generated value can hit: a real plugin, so plugin routes reach their
# services instead of stopping at 404; a blob key whose shards repeat its digest.
LIVE_PLUGIN = "schemathesis-live"


# Schema-valid requests refused for what no schema can say (issue 24: everything else the
# server checks is in the document): which category keys exist (administrators add them),
# that the live plugin is free (CONTRACT: buying a free plugin is 400 PLUGIN_IS_FREE), that a
# manifest's id and version equal the plugin's key and the requested version, and what the
# bytes of a package or an icon hold, how big the transparency log is. Each is named by its
# code and its message, exactly.
MISSING_THING_CODES = {"PLUGIN_INVALID_CATEGORY", "PLUGIN_IS_FREE"}
UNSAYABLE = (
    ("PLUGIN_PACKAGE_INVALID", "manifest.id does not match plugin.pluginKey"),
    ("PLUGIN_PACKAGE_INVALID", "manifest.version does not match requested version"),
    ("PLUGIN_PACKAGE_INVALID", "Package is not a gzip file"),
    ("PLUGIN_ICON_INVALID", "Icon must be a png, jpeg, svg or webp image"),
    ("SCENARIO_VALIDATION_FAILED", "category: Invalid category"),
    # The transparency log's ranges (CONTRACT 15): how big the tree is now, and one query
    # parameter against another.
    ("VALIDATION_FAILED", "end: is past the tree size"),
    ("VALIDATION_FAILED", "treeSize: is past the tree size"),
    ("VALIDATION_FAILED", "second: is past the tree size"),
    ("VALIDATION_FAILED", "end: must not be less than start"),
    ("VALIDATION_FAILED", "end: at most 1000 entries a call"),
    ("VALIDATION_FAILED", "first: must not be greater than second"),
    ("VALIDATION_FAILED", "index: must be less than treeSize"),
)


def _names_a_missing_thing(failure: Exception, response: Any) -> bool:
    if getattr(failure, "title", "") != "Schema-valid request rejected":
        return False
    try:
        error = response.json()["error"]
        code, message = error["code"], error["message"]
    except (ValueError, KeyError, TypeError):
        return False
    if response.status_code != 400:
        return False
    return code in MISSING_THING_CODES or any(
        code == known and message.startswith(start) for known, start in UNSAYABLE
    )


def _undeclared_code(document: dict[str, Any], operation: Any, response: Any) -> list[str]:
    """`METHOD path: status CODE` when an error code is missing from the operation's
    `x-error-codes` for its status ([] for successes, 5xx, and 405 and 416, which the
    generic 4XX covers where an operation does not list them)."""
    if response.status_code < 400 or response.status_code >= 500:
        return []
    spec = document["paths"][operation.path][operation.method.lower()]["responses"]
    generic = response.status_code in (405, 416)
    listed = spec.get(str(response.status_code), {}).get("x-error-codes", None if generic else [])
    try:
        code = response.json()["error"]["code"]
    except (ValueError, KeyError, TypeError):
        return []
    if listed is None or code in listed:
        return []
    return [f"{operation.method.upper()} {operation.path}: {response.status_code} {code}"]


def _schema(market: Market) -> Any:
    document = httpx.get(f"{market.url}/openapi.json").json()
    schema = schemathesis.openapi.from_dict(document)
    token = market.admin_token

    @schema.auth()
    class Bearer:
        """The administrator's token on every generated call; the `ignored_auth` check
        removes and spoils it to see that the service notices."""

        def get(self, case: Case, context: Any) -> str:
            return token

        def set(self, case: Case, data: str, context: Any) -> None:
            case.headers = {**(case.headers or {}), "Authorization": f"Bearer {data}"}

    return schema, document


def test_every_check_passes_against_the_live_server(market: Market, tmp_path_factory: Any) -> None:
    folder = write_plugin(tmp_path_factory.mktemp("st"), LIVE_PLUGIN)
    assert market.as_admin("publish", str(folder)).returncode == 0
    schema, document = _schema(market)
    known = {"plugin_id": LIVE_PLUGIN, "shard": "ab", "subshard": "cd", "digest": "abcd" + "0" * 60}

    started = time.monotonic()
    failures: list[str] = []
    undeclared: list[str] = []
    operations = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        operations += 1
        names = {p.name for p in operation.path_parameters}
        fixed = {k: v for k, v in known.items() if k in names} or None
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            try:
                cases = _collect(operation.as_strategy(mode, path_parameters=fixed))
            except Unsatisfiable:
                continue
            for case in cases:
                response = case.call(base_url=market.url, timeout=30)
                undeclared += _undeclared_code(document, operation, response)
                try:
                    case.validate_response(response)
                except FailureGroup as failure:
                    kept = [
                        e for e in failure.exceptions if not _names_a_missing_thing(e, response)
                    ]
                    if kept:
                        failures.append(f"{operation.label} [{mode.value}]: {failure}")
    elapsed = time.monotonic() - started

    assert operations == len([m for item in document["paths"].values() for m in item])
    assert failures == [], f"{len(failures)} failures; first:\n\n" + "\n\n".join(failures[:6])
    # Every error code answered is one the operation's OpenAPI lists for that status.
    assert sorted(set(undeclared)) == []
    print(f"schemathesis live: {operations} operations, every check, {elapsed:.1f}s")
