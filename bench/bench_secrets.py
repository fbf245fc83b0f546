"""The secret scan's false findings, measured on real plugin packages (issue 23's budget:
at most 1 false finding per 100 packages).

Fetches the packages named below with `npm pack NAME` (npm's configured registry) into a
cache outside the repository, ~/.cache/marketplace-bench/npm (MARKETPLACE_BENCH_CACHE
moves it; a package already there is not fetched again), then scans every file of each
as the service scans an upload (`marketplace_rules.secrets.FileScan`, fed 64 KiB at a
time), and prints

* packages scanned, and those that could not be fetched (skipped and counted);
* every finding: package, file, line, kind and the masked value (`--show` prints the
  line itself, cut to 160 characters, to triage it by hand);
* findings per 100 packages, and the false ones: every finding not triaged by hand as a
  real credential (REAL below records that triage) counts as false;
* the files whose scan stopped short, its budget spent (none is expected in real packages);
* each hostile mebibyte's scan time as a ratio of ordinary code's, measured in the same
  run (bench/secret_shapes.py; target at most 5 times), before anything is fetched;
* the time per package; and for comparison the same figures with the detector set
  before issue 23 (the module as it was at OLD_SCANNER, read from git), as a ratio.

    make bench-secrets                 # or: .venv/bin/python bench/bench_secrets.py
    python bench/bench_secrets.py --show --limit 20

Exit status: 0 when the findings are within the budget and every hostile shape within
its target, 1 when not (then triage the findings: real secrets do not count), 2 when no
package could be fetched.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from common import REPO
from secret_shapes import PATHS, TARGET_RATIO, hostile_ratios

from marketplace_rules import secrets

BUDGET_PER_100 = 1.0
CHUNK = 64 * 1024
NPM_SECONDS = 180
# The scanner before issue 23 turned on the keyword and AWS secret key detection.
OLD_SCANNER = "d28d613"
OLD_PATH = "client/src/marketplace_rules/secrets.py"

# Well-known MCP servers and tools published on npm: the reference servers, then servers
# of companies and of the community (chosen by downloads from a list of npm packages
# whose description says "MCP server"; platform-specific binaries left out).
PACKAGES = (
    "@modelcontextprotocol/server-filesystem",
    "@modelcontextprotocol/server-github",
    "@modelcontextprotocol/server-memory",
    "@modelcontextprotocol/server-everything",
    "@modelcontextprotocol/server-sequential-thinking",
    "@modelcontextprotocol/server-brave-search",
    "@modelcontextprotocol/server-google-maps",
    "@modelcontextprotocol/server-postgres",
    "@modelcontextprotocol/server-puppeteer",
    "@modelcontextprotocol/server-redis",
    "@modelcontextprotocol/server-slack",
    "@modelcontextprotocol/server-gdrive",
    "@modelcontextprotocol/server-gitlab",
    "@modelcontextprotocol/server-aws-kb-retrieval",
    "@modelcontextprotocol/server-everart",
    "@modelcontextprotocol/server-pdf",
    "@modelcontextprotocol/server-map",
    "@modelcontextprotocol/server-system-monitor",
    "@modelcontextprotocol/inspector",
    "chrome-devtools-mcp",
    "@upstash/context7-mcp",
    "mcp-proxy",
    "fastmcp",
    "@azure-devops/mcp",
    "@supabase/mcp-server-supabase",
    "@notionhq/notion-mcp-server",
    "@gongrzhe/server-gmail-autoauth-mcp",
    "nx-mcp",
    "next-devtools-mcp",
    "mongodb-mcp-server",
    "@stripe/mcp",
    "tavily-mcp",
    "@zereight/mcp-gitlab",
    "firecrawl-mcp",
    "@salesforce/mcp",
    "mcp-hello-world",
    "@executeautomation/playwright-mcp-server",
    "@eslint/mcp",
    "@mastra/mcp-docs-server",
    "@winor30/mcp-server-datadog",
    "@antv/mcp-server-chart",
    "@dynatrace-oss/dynatrace-mcp-server",
    "@cocal/google-calendar-mcp",
    "@hubspot/mcp-server",
    "@shortcut/mcp",
    "@apify/actors-mcp-server",
    "xcodebuildmcp",
    "@drawio/mcp",
    "@currents/mcp",
    "@brave/brave-search-mcp-server",
    "@z_ai/mcp-server",
    "mcp-server-code-runner",
    "@aashari/mcp-server-atlassian-jira",
    "@browsermcp/mcp",
    "@ivotoby/openapi-mcp-server",
    "@benborla29/mcp-server-mysql",
    "@shopify/dev-mcp",
    "@a-bonus/google-docs-mcp",
    "@mondaydotcomorg/monday-api-mcp",
    "@mapbox/mcp-server",
    "argocd-mcp",
    "mcp-server-kubernetes",
    "@amap/amap-maps-mcp-server",
    "@openbnb/mcp-server-airbnb",
    "@atlassian-dc-mcp/jira",
    "@heroku/mcp-server",
    "@cyanheads/git-mcp-server",
    "@pinecone-database/mcp",
    "@postman/postman-mcp-server",
    "airtable-mcp-server",
    "@roychri/mcp-server-asana",
    "@atlassian-dc-mcp/confluence",
    "@agentdeskai/browser-tools-mcp",
    "fetcher-mcp",
    "@mui/mcp",
    "figma-console-mcp",
    "mcp-deepwiki",
    "@cloudflare/mcp-server-cloudflare",
    "ios-simulator-mcp",
    "reddit-mcp-buddy",
    "@agent-infra/mcp-server-filesystem",
    "@negokaz/excel-mcp-server",
    "@line/line-bot-mcp-server",
    "@codacy/codacy-mcp",
    "hostinger-api-mcp",
    "@sylphx/pdf-reader-mcp",
    "mcp-searxng",
    "@chakra-ui/react-mcp",
    "@browserstack/mcp-server",
    "@browserbasehq/mcp-server-browserbase",
    "@aashari/mcp-server-atlassian-bitbucket",
    "@ergut/mcp-bigquery-server",
    "serper-search-scrape-mcp-server",
    "@gongrzhe/server-travelplanner-mcp",
    "@isaacphi/mcp-gdrive",
    "@codefuturist/email-mcp",
    "dataforseo-mcp-server",
    "howtocook-mcp",
    "@elastic/mcp-server-elasticsearch",
    "@delorenj/mcp-server-trello",
    "@masonator/coolify-mcp",
    "@cognitionai/metabase-mcp-server",
    "@kimsungwhee/apple-docs-mcp",
    "puppeteer-mcp-server",
    "todoist-mcp",
    "mcp-server-gsc",
    "@neondatabase/mcp-server-neon",
    "@auth0/auth0-mcp-server",
    "@kazuph/mcp-fetch",
    "@adenot/mcp-google-search",
    "mcp-obsidian",
    "mcp-mongo-server",
    "perplexity-mcp",
)


# Findings triaged by hand as real credentials (so not false findings), by package, file
# and masked value, with what they are. This is the bench's record of a triage, not an
# allowlist: the scanner rejects these packages (until the key goes, or its line carries
# `pragma: allowlist secret`).
REAL: dict[tuple[str, str, str], str] = {
    (
        "chrome-devtools-mcp",
        "build/src/third_party/index.js",
        "AIza…(39 chars)",
    ): "a Google API key (the Chrome UX Report API's), shipped in the bundle",
    **{
        ("@apify/actors-mcp-server", path, masked): "an Algolia search-only API key (docs search)"
        for path in ("dist/const.js", "dist/const.d.ts")
        for masked in ("e977…(32 chars)", "2676…(32 chars)", "8784…(32 chars)")
    },
}


@dataclass(frozen=True)
class Found:
    package: str
    path: str
    line: int | None
    kind: str
    masked: str
    text: str


@dataclass
class Tally:
    findings: list[Found]
    seconds: float = 0.0
    cut_short: list[str] = field(default_factory=list)  # files whose scan budget ran out


def cache_dir() -> Path:
    default = Path.home() / ".cache" / "marketplace-bench" / "npm"
    return Path(os.environ.get("MARKETPLACE_BENCH_CACHE", default))


def fetch(name: str, cache: Path) -> Path | None:
    """The package's tarball, fetched once with `npm pack`; None when npm fails."""
    folder = cache / name.replace("/", "__")
    found = sorted(folder.glob("*.tgz"))
    if found:
        return found[-1]
    folder.mkdir(parents=True, exist_ok=True)
    try:
        done = subprocess.run(
            ["npm", "pack", name, "--json", "--pack-destination", str(folder)],
            capture_output=True,
            text=True,
            timeout=NPM_SECONDS,
            check=False,
            cwd=folder,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        print(f"  skipped {name}: {exc}", file=sys.stderr)
        return None
    found = sorted(folder.glob("*.tgz"))
    if done.returncode != 0 or not found:
        reason = (done.stderr.strip().splitlines() or ["npm pack failed"])[-1]
        print(f"  skipped {name}: {reason}", file=sys.stderr)
        return None
    return found[-1]


def members(tarball: Path) -> list[tuple[str, bytes]]:
    """Every regular file of the package: (name without npm's `package/` folder, bytes)."""
    files: list[tuple[str, bytes]] = []
    with tarfile.open(tarball, "r:gz") as archive:
        for member in archive:
            if not member.isfile():
                continue
            extracted = archive.extractfile(member)
            if extracted is None:
                continue
            name = member.name.split("/", 1)[1] if "/" in member.name else member.name
            files.append((name, extracted.read()))
    return files


def scan(module: ModuleType, package: str, files: list[tuple[str, bytes]], tally: Tally) -> None:
    started = time.perf_counter()
    hits: list[tuple[str, Any, bytes]] = []
    # One budget for the package's files, as an upload's (the old scanner had none).
    budget = {"budget": module.ScanBudget()} if hasattr(module, "ScanBudget") else {}
    for name, data in files:
        file_scan = module.FileScan(name, **budget)
        for start in range(0, len(data), CHUNK):
            if file_scan.done:
                break
            file_scan.feed(data[start : start + CHUNK])
        hits += [(name, hit, data) for hit in file_scan.finish().hits]
        if getattr(file_scan, "cut_short", False):
            tally.cut_short.append(f"{package}: {name}")
    tally.seconds += time.perf_counter() - started
    for name, hit, data in hits:
        lines = data.split(b"\n")
        text = lines[hit.line - 1] if hit.line and hit.line <= len(lines) else b""
        shown = text.decode("utf-8", "replace").strip()[:160]
        tally.findings.append(Found(package, name, hit.line, hit.kind, hit.masked, shown))


def old_scanner() -> ModuleType | None:
    """The scanner module as it was before issue 23, from git; None without git."""
    try:
        source = subprocess.run(
            ["git", "show", f"{OLD_SCANNER}:{OLD_PATH}"],
            capture_output=True,
            text=True,
            check=True,
            cwd=REPO,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    folder = Path(tempfile.mkdtemp(prefix="bench-secrets-"))
    path = folder / "old_secrets.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("old_secrets", path)
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    sys.modules["old_secrets"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def per_100(count: int, packages: int) -> float:
    return 100 * count / packages if packages else 0.0


def report(label: str, tally: Tally, packages: int) -> None:
    rate = per_100(len(tally.findings), packages)
    each = 1000 * tally.seconds / packages if packages else 0.0
    print(
        f"{label}: {len(tally.findings)} findings, {rate:.2f} per 100 packages, "
        f"{each:.1f} ms per package ({tally.seconds:.2f} s)"
    )


def hostile_shapes() -> list[str]:
    """Print each hostile shape's cost over ordinary code's; return those over target."""
    slow: list[str] = []
    for path in PATHS:
        print(f"hostile mebibytes as {path}, times ordinary code (target {TARGET_RATIO:.0f}):")
        for shape, ratio in hostile_ratios(path).items():
            over = ratio > TARGET_RATIO
            slow += [f"{path}: {shape}"] if over else []
            print(f"  {shape}: {ratio:.1f}{'  OVER TARGET' if over else ''}")
    return slow


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=len(PACKAGES), help="first N packages")
    parser.add_argument("--show", action="store_true", help="print each finding's line")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()

    slow = hostile_shapes()
    cache = cache_dir()
    print(f"cache: {cache}")
    fetched: list[tuple[str, list[tuple[str, bytes]]]] = []
    skipped: list[str] = []
    for name in PACKAGES[: args.limit]:
        tarball = fetch(name, cache)
        if tarball is None:
            skipped.append(name)
            continue
        try:
            fetched.append((name, members(tarball)))
        except (OSError, tarfile.TarError) as exc:
            print(f"  skipped {name}: {exc}", file=sys.stderr)
            skipped.append(name)
    if not fetched:
        print("no package could be fetched", file=sys.stderr)
        return 2

    secrets.scan_bytes("warm.js", b"const a = 1;\n")  # detect-secrets' import, once
    new = Tally([])
    for name, files in fetched:
        scan(secrets, name, files, new)
    old_module = old_scanner()
    old = Tally([])
    if old_module is not None:
        old_module.scan_bytes("warm.js", b"const a = 1;\n")
        for name, files in fetched:
            scan(old_module, name, files, old)

    packages = len(fetched)
    files = sum(len(files) for _name, files in fetched)
    size = sum(len(data) for _name, files in fetched for _path, data in files)
    print(
        f"packages scanned: {packages} ({files} files, {size / 1024 / 1024:.1f} MiB); "
        f"skipped: {len(skipped)}{' (' + ', '.join(skipped) + ')' if skipped else ''}"
    )
    false = 0
    for found in new.findings:
        where = f"{found.package}: {found.path}:{found.line}"
        real = REAL.get((found.package, found.path, found.masked))
        false += real is None
        verdict = f"real: {real}" if real else "not triaged: counted as false"
        print(f"  {where}: {found.kind} ({found.masked}); {verdict}")
        if args.show:
            print(f"      {found.text}")
    report("now", new, packages)
    print(f"files the scan budget cut short: {len(new.cut_short)}")
    for name in new.cut_short:
        print(f"  {name}")
    if old_module is not None:
        report(f"before ({OLD_SCANNER})", old, packages)
        ratio = new.seconds / old.seconds if old.seconds else float("nan")
        print(f"time now / before: {ratio:.2f}")
    rate = per_100(false, packages)
    print(
        f"false findings: {false}, {rate:.2f} per 100 packages (budget {BUDGET_PER_100:.0f}; "
        f"{len(new.findings) - false} triaged by hand as real credentials)"
    )
    if args.json is not None:
        figures = {
            "packages": packages,
            "skipped": skipped,
            "findings": [found.__dict__ | {"text": None} for found in new.findings],
            "false": false,
            "falsePer100": rate,
            "seconds": new.seconds,
            "cutShort": new.cut_short,
            "oldFindings": len(old.findings) if old_module is not None else None,
            "oldSeconds": old.seconds if old_module is not None else None,
        }
        args.json.write_text(json.dumps(figures, indent=2), encoding="utf-8")
    return 0 if rate <= BUDGET_PER_100 and not slow else 1


if __name__ == "__main__":
    sys.exit(main())
