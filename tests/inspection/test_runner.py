"""The sandbox runner (CONTRACT 13) against the fixture corpus: every fixture gives the
report its fixture.json expects; listings are kept as sent on the wire and bounded."""

from __future__ import annotations

import hashlib
import json
import runpy
from pathlib import Path
from typing import Any

import pytest

from marketplace.inspection.judgement import undeclared
from marketplace.inspection.report import PLACEHOLDER_VALUE
from marketplace.inspection.runner import sandbox_available
from marketplace_rules.canonical import canonical_json
from tests.inspection.runner_support import (
    Fixture,
    assert_expected,
    fixture,
    fixtures,
    inspect,
    leftovers,
)

pytestmark = pytest.mark.skipif(
    sandbox_available() is not None, reason=f"no sandbox here: {sandbox_available()}"
)

# Hostile fixtures have tests of their own (time limits, leftovers, the attack's listener):
# test_runner_hostile.py.
CORPUS = [
    pytest.param(item, id=item.name) for item in fixtures() if not item.name.startswith("hostile-")
]


def _skip_if_missing(item: Fixture) -> None:
    reason = item.missing()
    if reason is not None:
        pytest.skip(f"{item.name}: {reason}")


@pytest.mark.parametrize("item", CORPUS)
async def test_fixture_gives_its_expected_report(item: Fixture, tmp_path: Path) -> None:
    _skip_if_missing(item)
    run = await inspect(item, tmp_path)
    assert_expected(run.report, item.expect)
    assert leftovers(run) == []
    # Held exactly when it did something its manifest does not declare: a benign server
    # never is; each undeclared behaviour is (capability-undeclared rejects the version).
    manifest = {"permissions": item.spec.get("permissions", [])}
    missing = undeclared(run.report.observed.to_json(), manifest)
    observed = item.expect.get("observed") or {}
    assert bool(missing) == any(observed.values()), missing


def _fingerprint(wire: dict[str, Any]) -> str:
    return hashlib.sha256(canonical_json(wire)).hexdigest()


async def test_tools_are_kept_as_sent_with_fingerprints_of_the_wire_values(
    tmp_path: Path,
) -> None:
    item = fixture("py-unicode-annotations")
    wire = runpy.run_path(str(item.folder / "wire.py"))
    report = (await inspect(item, tmp_path)).report
    assert report.status == "done", report.error
    for sent, kept in zip(wire["TOOLS"], report.tools, strict=True):
        fields = {k: sent.get(k) for k in ("name", "description", "inputSchema", "annotations")}
        # No hint the server left out is filled in, in what is kept or what is hashed.
        assert kept == {**fields, "fingerprint": _fingerprint(fields)}
    [prompt] = report.prompts
    sent_prompt = {"name": "翻译", "description": "Traduire ➜ 中文", "arguments": None}
    assert prompt == {**sent_prompt, "fingerprint": _fingerprint(sent_prompt)}
    assert report.resources == [
        {"uri": "memo://日记", "name": "日记", "description": "Journal intime ✍", "mimeType": None}
    ]
    assert report.server == {
        "name": "unicode-ünï",
        "version": "2.0.0-β",
        "instructions": wire["INSTRUCTIONS"],
    }


async def test_absent_keys_are_null_in_what_is_kept_and_in_the_fingerprint(
    tmp_path: Path,
) -> None:
    report = (await inspect(fixture("py-paginated"), tmp_path)).report
    tool_3 = report.tools[3]
    assert tool_3["description"] is None
    wire = {"name": "tool_3", "description": None, "inputSchema": {"type": "object"}}
    assert tool_3["fingerprint"] == _fingerprint({**wire, "annotations": None})
    prompt_4 = report.prompts[4]
    assert prompt_4["arguments"] is None
    assert prompt_4["fingerprint"] == _fingerprint(
        {"name": "prompt_4", "description": None, "arguments": None}
    )


async def test_what_is_kept_is_bounded_and_fingerprints_cover_the_full_values(
    tmp_path: Path,
) -> None:
    item = fixture("py-bounds")
    sent = runpy.run_path(str(item.folder / "wire.py"))["tools"]()
    report = (await inspect(item, tmp_path)).report
    assert report.status == "done", report.error
    assert len(report.tools) == 256
    assert [tool["name"] for tool in report.tools] == [tool["name"] for tool in sent[:256]]
    for wire, kept in zip(sent, report.tools, strict=False):
        fields = {k: wire.get(k) for k in ("name", "description", "inputSchema", "annotations")}
        assert kept["fingerprint"] == _fingerprint(fields)
    long_description = report.tools[0]["description"]
    assert len(long_description) == 8001
    assert long_description.endswith("…")
    assert report.tools[1]["inputSchema"]["x-marketplace-omitted"] == "too large"
    assert report.tools[2]["description"] == "nulinside"
    assert report.tools[2]["inputSchema"] == {
        "type": "object",
        "properties": {"ab": {"const": "cd"}},
    }


async def test_the_server_sees_its_config_as_placeholders_and_nothing_of_the_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MARKETPLACE_SECRET_KEY", "host-secret")
    item = fixture("py-config-env")
    run = await inspect(item, tmp_path)
    assert run.report.status == "done", run.report.error
    seen = json.loads(run.report.tools[0]["description"])
    assert seen["env"] == {
        "API_TOKEN": PLACEHOLDER_VALUE,
        "GREETING": f"hello {PLACEHOLDER_VALUE}",
        "HOME": "/home/inspect",
        "INSPECTION_TEST_MARKER": run.marker,
        "LANG": "C.UTF-8",
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "PWD": "/plugin",  # bwrap's --chdir sets it
        "PYTHONDONTWRITEBYTECODE": "1",
        "REGION": "eu",
        "TMPDIR": "/tmp",
    }
    assert seen["argv"] == ["--token", PLACEHOLDER_VALUE]
    assert seen["cwd"] == "/plugin"
