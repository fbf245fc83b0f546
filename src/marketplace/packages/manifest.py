"""The service's side of the manifest rules: `marketplace_rules` findings turned into the
service's errors (refusals) and review-note lines (automatic validation).

The structural checks are separate steps so that a caller can run its own between them,
in the contract's order: check_manifest_identity (id, version, semver), then the
caller's "version is new" lookup, then check_manifest_category, then check_manifest_shape.
Each raises on the first finding of its step, in the words the API has always used.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from itertools import takewhile
from typing import Any

import semver

from marketplace.errors import AppError, InvalidCategory, PackageInvalid, ValidationFailed
from marketplace.packages.archive import ArchiveInfo
from marketplace_rules import manifest as rules
from marketplace_rules.content import content_findings
from marketplace_rules.findings import FILE_PATH_PREFIX, Code, Finding
from marketplace_rules.limits import (
    ICON_MAX_BYTES,
    PLUGIN_KEY_MAX_LENGTH,
    PLUGIN_KEY_MIN_LENGTH,
    VERSION_MAX_LENGTH,
)
from marketplace_rules.manifest import is_valid_plugin_key
from marketplace_rules.text import display, has_forbidden_chars
from marketplace_rules.versions import is_valid_version, parse_version, version_sort_key
from marketplace_rules.vocabulary import MANIFEST_NAME, MCP_TRANSPORTS, UI_PERMISSION, Distribution

# Importers of this module (plugins, scenarios, review) keep these names.
__all__ = [
    "ICON_MAX_BYTES",
    "MCP_TRANSPORTS",
    "PLUGIN_KEY_MAX_LENGTH",
    "PLUGIN_KEY_MIN_LENGTH",
    "UI_PERMISSION",
    "VERSION_MAX_LENGTH",
    "Distribution",
    "check_manifest_category",
    "check_manifest_identity",
    "check_manifest_shape",
    "check_package_manifest",
    "check_version",
    "deep_findings",
    "distribution_of",
    "has_forbidden_chars",
    "is_valid_plugin_key",
    "is_valid_version",
    "note_line",
    "parse_version",
    "refusal",
    "validate_mcp",
    "version_sort_key",
]


def check_version(version: str, *, field: str = "version") -> semver.Version:
    """parse_version, refusing with 400 VALIDATION_FAILED naming the field."""
    try:
        return parse_version(version)
    except ValueError as exc:
        raise ValidationFailed.field(field, str(exc)) from None


def check_manifest_identity(
    manifest: Mapping[str, Any],
    *,
    plugin_key: str,
    version: str,
    error: type[AppError] = PackageInvalid,
) -> semver.Version:
    """manifest.id == pluginKey (case-sensitive), manifest.version == version, semver valid."""
    findings = rules.identity_findings(manifest, plugin_key=plugin_key, version=version)
    if findings:
        raise refusal(findings, error)
    return parse_version(version)


def check_manifest_category(
    manifest: Mapping[str, Any],
    *,
    categories: Collection[str],
    error: type[AppError] = PackageInvalid,
) -> str:
    """manifest.category present and in the category table (PLUGIN_INVALID_CATEGORY)."""
    findings = rules.category_findings(manifest, categories=categories)
    if findings and findings[0].code is Code.CATEGORY_UNKNOWN:
        raise InvalidCategory(manifest["category"])
    if findings:
        raise refusal(findings, error)
    category: str = manifest["category"]
    return category


def check_manifest_shape(
    manifest: Mapping[str, Any],
    *,
    plugin_type: str | None = None,
    error: type[AppError] = PackageInvalid,
) -> None:
    """main present ("" allowed); optional keys of the right JSON type; mcp declaration valid."""
    findings = rules.shape_findings(manifest, plugin_type=plugin_type)
    if findings:
        raise refusal(findings, error)


def check_package_manifest(
    manifest: Mapping[str, Any],
    *,
    plugin_key: str,
    version: str,
    categories: Collection[str],
    plugin_type: str | None = None,
    error: type[AppError] = PackageInvalid,
) -> None:
    """Every structural step in the contract's order, for callers with nothing to interleave."""
    check_manifest_identity(manifest, plugin_key=plugin_key, version=version, error=error)
    check_manifest_category(manifest, categories=categories, error=error)
    check_manifest_shape(manifest, plugin_type=plugin_type, error=error)


def validate_mcp(declaration: object) -> list[str]:
    """Problems with an mcp declaration (stdio command or remote url); [] when valid."""
    return [_mcp_problem(finding) for finding in rules.mcp_findings(declaration)]


def distribution_of(
    manifest: Mapping[str, Any],
    *,
    has_package: bool,
    error: type[AppError] = ValidationFailed,
) -> Distribution:
    """Seed 2.4: tarball when main is non-empty and a package came; config_only when main is
    "" and a valid mcp is declared; inline when inlineCode or inlineUiCode is present."""
    distribution = rules.distribution_of(manifest, has_package=has_package)
    if distribution == "config_only":
        problems = validate_mcp(manifest["mcp"])
        if problems:
            raise _fail(error, "manifest.mcp", "; ".join(problems))
    if distribution is None:
        raise refusal(rules.distribution_findings(manifest, has_package=has_package), error)
    return distribution


def deep_findings(manifest: Mapping[str, Any], info: ArchiveInfo | None) -> list[str]:
    """Automatic-validation findings; each one a sentence for the review note.

    info is the archive of a tarball version; None for config_only and inline versions,
    where only the manifest-level findings apply.
    """
    return [note_line(finding) for finding in content_findings(manifest, info)]


# ---------- findings in the service's words ----------

# Review notes name these places without the "manifest." prefix.
_BARE_PLACES = ("contributes.", "permissions", "config[")
_DOCUMENT_CODES = frozenset(
    {
        Code.MANIFEST_NOT_UTF8,
        Code.MANIFEST_NOT_JSON,
        Code.MANIFEST_REPEATED_KEY,
        Code.MANIFEST_NOT_OBJECT,
        Code.MANIFEST_UNSTORABLE_TEXT,
        Code.MANIFEST_UNSAFE_NUMBER,
        Code.MANIFEST_TOO_DEEP,
    }
)


def refusal(findings: Sequence[Finding], error: type[AppError] = PackageInvalid) -> AppError:
    """The error the service answers for the first of a structural step's findings.

    An invalid requested version is VALIDATION_FAILED naming the form field `version`;
    the seed's mismatch messages stand alone; an invalid mcp declaration is one refusal
    listing each of its problems (the findings that follow it, of the same kind).
    """
    first = findings[0]
    match first.code:
        case Code.VERSION_INVALID:
            return ValidationFailed.field("version", first.message)
        case Code.ID_MISMATCH | Code.VERSION_MISMATCH:
            return error(note_line(first))
        case Code.CATEGORY_UNKNOWN:
            raise ValueError("an unknown category is refused with the category itself")
        case Code.MCP_INVALID:
            siblings = list(takewhile(lambda f: f.code is Code.MCP_INVALID, findings))
            return _fail(error, "manifest.mcp", "; ".join(_mcp_problem(f) for f in siblings))
    if first.code in _DOCUMENT_CODES:
        return error(note_line(first))
    return _fail(error, _field(first.path), first.message)


def note_line(finding: Finding) -> str:
    """A finding as one sentence, its place then its message, as review notes list them."""
    path, message = finding.path, finding.message
    match finding.code:
        case Code.HIDDEN_CHARACTERS_MORE | Code.FINDINGS_MORE:
            return message
        case Code.HIDDEN_CHARACTERS:
            return f"{display(f'manifest.{path}')} {message}"
        case Code.HIDDEN_CHARACTERS_IN_KEY:
            return f"{display(f'manifest.{path} (key name)')} {message.removeprefix('key name ')}"
        case Code.HIDDEN_CHARACTERS_IN_FILE_NAME:
            name = display(path.removeprefix(FILE_PATH_PREFIX), 60)
            return f"file name {name} {message.removeprefix('name ')}"
        case Code.CONFIG_KEY_MISSING:
            return f"{path.removesuffix('.key')} has no key"
        case Code.CONFIG_KEY_REPEATED:
            return f"{path.removesuffix('.key')} {message}"
    if finding.code in _DOCUMENT_CODES:
        return f"{MANIFEST_NAME} {message}"
    if path.startswith(_BARE_PLACES):
        return f"{path} {message}"
    return f"{_field(path)} {message}"


def _field(path: str) -> str:
    return f"manifest.{path}" if path else "manifest"


def _mcp_problem(finding: Finding) -> str:
    """An mcp finding as the API words it after "manifest.mcp": `command must be ...`."""
    member = finding.path.removeprefix("mcp").removeprefix(".")
    return f"{member} {finding.message}" if member else finding.message


def _fail(error: type[AppError], field: str, problem: str) -> AppError:
    if issubclass(error, ValidationFailed):
        return error.field(field, problem)
    return error(f"{field} {problem}")
