"""The secret scan's false-finding budget (issue 23: at most 1 false finding per 100
packages), measured offline on real published packages: the third-party distributions
installed in this environment (each one's files as published, over a hundred of them).

Every text file of each is scanned as the service scans an upload: fed 64 KiB at a time
to `FileScan` until it is done (binary, or HITS_PER_FILE hits). A file `publish` leaves
out as a secret (`*.key`, `*.pem`, `.env*`: its sensitive defaults) is counted apart: what
it holds is a key, not a false finding. Nothing is allowed by package name.

The same measure on about 100 real MCP-server packages from npm is `make bench-secrets`.
"""

from __future__ import annotations

import importlib.metadata
from collections import Counter
from pathlib import Path

from marketplace_client.pack import IgnoreRules
from marketplace_rules.secrets import AWS_SECRET_KEY, KEYWORD_SECRET, FileScan, SecretHit

BUDGET_PER_100 = 1.0
CHUNK = 64 * 1024
NEW_KINDS = {KEYWORD_SECRET, AWS_SECRET_KEY}
OURS = {"marketplace", "marketplace-client"}


def distributions() -> dict[str, list[tuple[str, Path]]]:
    """Each installed third-party distribution's files: (path as published, location)."""
    found: dict[str, list[tuple[str, Path]]] = {}
    for distribution in importlib.metadata.distributions():
        name = distribution.metadata["Name"]
        if not name or name.lower() in OURS or name in found:
            continue
        found[name] = [(str(file), Path(str(file.locate()))) for file in distribution.files or []]
    return found


def scan_file(published: str, location: Path) -> list[SecretHit]:
    scan = FileScan(published)
    try:
        with location.open("rb") as source:
            while not scan.done and (piece := source.read(CHUNK)):
                scan.feed(piece)
    except OSError:
        return []
    return scan.finish().hits


def test_false_findings_on_installed_distributions_are_within_the_budget() -> None:
    packages = distributions()
    assert len(packages) >= 90, "the corpus is the environment's distributions"
    left_out = IgnoreRules([])  # publish's sensitive defaults
    counted: list[tuple[str, SecretHit]] = []
    keys: list[tuple[str, SecretHit]] = []
    for name, files in packages.items():
        for published, location in files:
            hits = scan_file(published, location)
            bucket = keys if left_out.sensitive(published) else counted
            bucket += [(name, hit) for hit in hits]
    rate = 100 * len(counted) / len(packages)
    new = [hit for _name, hit in counted if hit.kind in NEW_KINDS]
    print(
        f"\n{len(packages)} distributions: {len(counted)} findings ({rate:.2f} per 100 "
        f"packages; {len(new)} from the keyword and AWS secret key detection); "
        f"{len(keys)} in key files publish leaves out"
    )
    for name, hit in counted:
        print(f"  {name}: {hit.path}:{hit.line}: {hit.kind} ({hit.masked})")
    assert rate <= BUDGET_PER_100, Counter(name for name, _hit in counted)
