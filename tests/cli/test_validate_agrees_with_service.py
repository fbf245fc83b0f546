"""`marketplace validate` and the service's upload judge text a model reads (CONTRACT 14)
alike: for every text of the labelled corpus (both splits, poisoned and benign), the ai-*
findings validate prints for a plugin folder holding it equal the findings the service
stores on the version uploaded from the same folder, packed as `publish` packs it.

Texts go PER_PACKAGE to a package, as SKILL.md and docs/NN.md, so the corpus takes a few
uploads; PER_PACKAGE keeps every package far below FINDINGS_MAX (7 codes per file at most,
and no other finding on these folders). The corpus is read from ../shared/data
(bench/findings_corpus.py): without it the test is skipped, except under CI=true.
"""

from __future__ import annotations

from pathlib import Path

import httpx
from bench.findings_corpus import corpus_or_skip, shown

from marketplace_client.pack import pack
from marketplace_rules.limits import FINDINGS_MAX
from marketplace_rules.model_text import AI_CODES
from tests.factories import Factory
from tests.helpers import ok
from tests.plugins.test_upload import tool_plugin, upload

from .helpers import Invoke, make_plugin, stdout_json

PER_PACKAGE = 20
Brief = tuple[str, str, str, str]  # code, severity, path, message


def file_name(index: int) -> str:
    return "SKILL.md" if index == 0 else f"docs/{index:02d}.md"


def ai_findings(findings: list[dict[str, str]]) -> set[Brief]:
    return {
        (f["code"], f["severity"], f["path"], f["message"])
        for f in findings
        if f["code"] in AI_CODES
    }


def validated(invoke: Invoke, folder: Path) -> list[dict[str, str]]:
    result = invoke(["validate", str(folder), "--json"], auth=False)
    assert result.exit_code in (0, 1), result.output
    findings: list[dict[str, str]] = stdout_json(result)["data"]["findings"]
    return findings


def difference(local: set[Brief], stored: set[Brief], chunk: list[str], package: int) -> list[str]:
    """Each finding only one side has, with the text of its file."""
    by_file = {f"file:{file_name(index)}": text for index, text in enumerate(chunk)}
    lines = []
    for side, only in (("validate only", local - stored), ("service only", stored - local)):
        for code, severity, path, message in sorted(only):
            text = by_file.get(path.rsplit(":", 1)[0], "")
            lines.append(
                f"package {package}, {side}: {code} ({severity}) at {path}: {message}\n"
                f"    text: {shown(text)!r}"
            )
    return lines


async def test_validate_prints_the_findings_the_service_stores(
    client: httpx.AsyncClient, factory: Factory, invoke: Invoke, tmp_path: Path
) -> None:
    every = corpus_or_skip().texts()
    assert PER_PACKAGE * 7 < FINDINGS_MAX
    dev = await factory.developer()
    mismatches: list[str] = []
    local_total = 0
    for package, start in enumerate(range(0, len(every), PER_PACKAGE)):
        chunk = every[start : start + PER_PACKAGE]
        plugin = await tool_plugin(client, dev)
        files: dict[str, str | bytes] = {
            file_name(index): text.encode("utf-8") for index, text in enumerate(chunk)
        }
        folder = make_plugin(
            tmp_path, plugin["pluginKey"], files=files, category="utility", version="1.0.0"
        )
        local = ai_findings(validated(invoke, folder))
        packed = pack(folder, tmp_path / f"{plugin['pluginKey']}.tar.gz")
        version = ok(await upload(client, dev, plugin, packed.path.read_bytes()), 201)
        stored = ai_findings(version["findings"])
        assert len(version["findings"]) < FINDINGS_MAX, "the findings cap was reached"
        mismatches += difference(local, stored, chunk, package)
        local_total += len(local)
    assert local_total > 0, "validate found nothing in the whole corpus: are the rules wired?"
    assert mismatches == [], "\n".join(mismatches)
