"""Every finding stored on a new version (CONTRACT 12), for plugins and scenarios alike:
errors (automatic validation, which rejects), then warnings and infos for the reviewer.

`finalize` puts them in their stored order (errors, warnings, infos; within a severity,
the order the rules produced) and caps their number and their lengths, so a hostile
package cannot grow the version row (DESIGN invariant 8).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from marketplace_rules.changes import change_findings
from marketplace_rules.content import content_findings, text_findings
from marketplace_rules.files import PackageTraits, file_findings
from marketplace_rules.findings import SEVERITIES, Code, Finding
from marketplace_rules.limits import FINDING_MESSAGE_MAX, FINDING_PATH_MAX, FINDINGS_MAX
from marketplace_rules.model_text import manifest_texts, model_text_findings
from marketplace_rules.secrets import scan_document, secret_findings

SCENARIO_PACKAGE_MANIFEST = "package"
"""Where a scenario package's manifest.json sits in the document its findings name
(`package.description`), as the reviewer's diff names its keys."""


def plugin_version_findings(
    manifest: Mapping[str, Any],
    package: PackageTraits | None,
    *,
    base: Mapping[str, Any] | None,
    compared: bool = True,
) -> list[Finding]:
    """A plugin version's findings: automatic validation, its files, the text a model
    reads (its manifest's, its Markdown and text files'), and the changes against
    `base`, the last approved version's manifest (None: there is none, the first
    version's permissions are listed). compared=False leaves the changes out: the
    publishing tool without a base folder does not know the last approved version."""
    return finalize(
        [
            *content_findings(manifest, package),
            *package_secret_findings(manifest, package),
            *file_findings(package),
            *model_text_findings(manifest_texts(manifest)),
            *package_text_findings(package),
            *(change_findings(manifest, base) if compared else []),
        ]
    )


def package_text_findings(package: PackageTraits | None) -> list[Finding]:
    """What the package's Markdown and text files tell a model (CONTRACT 14)."""
    return model_text_findings(package.model_texts) if package is not None else []


def package_secret_findings(
    document: Mapping[str, Any], package: PackageTraits | None
) -> list[Finding]:
    """Secrets in the package's files (its manifest.json included, scanned as text), or
    without a package in the document's strings (an inline or config-only manifest)."""
    if package is not None:
        return secret_findings(package.secrets)
    return secret_findings(scan_document(document).hits)


def scenario_document(
    metadata: Mapping[str, Any], package_manifest: Mapping[str, Any] | None
) -> dict[str, Any]:
    """What a scenario version's findings are about: its metadata (camelCase, as the API
    shows it) and, under `package`, its package's manifest.json when it has one."""
    document = dict(metadata)
    if package_manifest is not None:
        document[SCENARIO_PACKAGE_MANIFEST] = dict(package_manifest)
    return document


def scenario_version_findings(
    metadata: Mapping[str, Any],
    package_manifest: Mapping[str, Any] | None,
    package: PackageTraits | None,
    *,
    base: Mapping[str, Any] | None,
) -> list[Finding]:
    """A scenario version's findings: hidden characters in its metadata, its package's
    manifest and file names; its files; the text a model reads (its metadata's, its
    package manifest's under `package`, its package's Markdown and text files'); its
    permissions against `base`, the last approved version's metadata. A scenario's
    manifest.json has no schema of its own, so the plugin rules about main, UI, icon and
    config items do not apply to it."""
    texts = [*manifest_texts(metadata)]
    if package_manifest is not None:
        texts += manifest_texts(package_manifest, SCENARIO_PACKAGE_MANIFEST)
    return finalize(
        [
            *text_findings(scenario_document(metadata, package_manifest), package),
            *secret_findings(scan_document(metadata).hits),
            *(secret_findings(package.secrets) if package is not None else []),
            *file_findings(package),
            *model_text_findings(texts),
            *package_text_findings(package),
            *change_findings(metadata, base),
        ]
    )


def ordered(findings: Iterable[Finding]) -> list[Finding]:
    """Errors first, then warnings, then infos; within a severity, as the rules found them."""
    return sorted(findings, key=lambda finding: SEVERITIES.index(finding.severity))


def finalize(findings: Iterable[Finding]) -> list[Finding]:
    """The findings as a version keeps them: `ordered`; at most FINDINGS_MAX, the last
    one counting the rest; messages and paths cut to their limits."""
    kept = ordered(findings)
    if len(kept) > FINDINGS_MAX:
        kept = [*kept[: FINDINGS_MAX - 1], _more(kept[FINDINGS_MAX - 1 :])]
    return [_clipped(finding) for finding in kept]


def has_errors(findings: Iterable[Finding]) -> bool:
    return any(finding.severity == "error" for finding in findings)


def _more(dropped: list[Finding]) -> Finding:
    counts = Counter(finding.severity for finding in dropped)
    detail = ", ".join(
        f"{counts[severity]} {severity}{'' if counts[severity] == 1 else 's'}"
        for severity in SEVERITIES
        if counts[severity]
    )
    # As serious as the most serious finding it stands for: an error still rejects.
    return Finding(
        Code.FINDINGS_MORE,
        dropped[0].severity,
        "",
        f"... and {len(dropped)} more findings ({detail})",
    )


def _clipped(finding: Finding) -> Finding:
    if len(finding.message) <= FINDING_MESSAGE_MAX and len(finding.path) <= FINDING_PATH_MAX:
        return finding
    return Finding(
        finding.code,
        finding.severity,
        _cut(finding.path, FINDING_PATH_MAX),
        _cut(finding.message, FINDING_MESSAGE_MAX),
    )


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
