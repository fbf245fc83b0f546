"""Client-side checks of a plugin's manifest.json, reporting every problem at once.

The rules are the service's own (`marketplace_rules`), run against the files the folder's
package would hold, so a publisher hears about every fault the service would refuse or
reject before anything is sent; on top come the rules for the plugin record the tool
builds from the manifest. Given the service's category list, an unknown category is
listed with every other problem (a category alone is PLUGIN_INVALID_CATEGORY, as the
service says it).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from marketplace_client.errors import CliError, ManifestInvalid, SecretsFound
from marketplace_client.pack import listing
from marketplace_rules.content import is_icon_path, package_path
from marketplace_rules.findings import Code, Finding
from marketplace_rules.manifest import (
    UnreadableManifest,
    load_manifest,
    mcp_findings,
    plugin_key_findings,
    plugin_manifest_findings,
)
from marketplace_rules.secrets import secret_findings
from marketplace_rules.text import display
from marketplace_rules.versions import version_problem
from marketplace_rules.vocabulary import MANIFEST_NAME

__all__ = [
    "PluginManifest",
    "check_manifest",
    "check_mcp_declaration",
    "check_plugin_key",
    "check_version",
    "invalid_category",
    "load_checked_manifest",
    "manifest_bytes",
    "problem_line",
    "read_manifest",
    "safe_relative",
    "ui_entry",
]


def problem_line(finding: Finding) -> str:
    """A finding as the tool prints it: `mcp.command: must be a non-empty string ...`."""
    where = display(finding.path) if finding.path else MANIFEST_NAME
    return f"{where}: {finding.message}"


def manifest_invalid(findings: list[Finding]) -> ManifestInvalid:
    return ManifestInvalid(
        [problem_line(finding) for finding in findings],
        findings=[finding.to_json() for finding in findings],
    )


def check_manifest(
    manifest: Any, plugin_dir: Path | None = None, *, for_publish: bool = True
) -> list[Finding]:
    """Every finding for `manifest` (empty when it is valid); with `plugin_dir`, the files
    it names are looked for among those the folder's package would hold."""
    if not isinstance(manifest, dict):
        return [Finding.error(Code.MANIFEST_NOT_OBJECT, "", "must contain a JSON object")]
    package = listing(plugin_dir) if plugin_dir is not None else None
    return plugin_manifest_findings(manifest, package, publishing=for_publish)


def check_plugin_key(value: Any, field: str = "id") -> list[Finding]:
    """A pluginKey given on the command line or in a manifest."""
    if not isinstance(value, str) or not value:
        return [Finding.error(Code.REQUIRED, field, "is required (a non-empty string)")]
    return plugin_key_findings(value, field)


def check_version(value: Any, field: str = "version") -> list[Finding]:
    if not isinstance(value, str):
        return [Finding.error(Code.REQUIRED, field, "is required (a semver string)")]
    problem = version_problem(value)
    return [] if problem is None else [Finding.error(Code.VERSION_INVALID, field, problem)]


def check_mcp_declaration(value: Any) -> list[Finding]:
    """The `mcp` capability declaration: a stdio command or a remote URL."""
    return mcp_findings(value)


def ui_entry(manifest: Mapping[str, Any]) -> Any:
    contributes = manifest.get("contributes")
    if not isinstance(contributes, dict):
        return None
    ui = contributes.get("ui")
    return ui.get("entry") if isinstance(ui, dict) else None


def safe_relative(path: str) -> bool:
    """A relative path that stays inside its folder (and names no Windows stream or drive)."""
    return ":" not in path and package_path(path) is not None


def read_manifest(plugin_dir: Path) -> dict[str, Any]:
    """The parsed manifest.json of a folder, or ManifestInvalid saying why it cannot be read."""
    path = plugin_dir / MANIFEST_NAME
    try:
        raw = path.read_bytes()
    except FileNotFoundError as exc:
        raise ManifestInvalid([f"{path}: not found"]) from exc
    except OSError as exc:
        raise ManifestInvalid([f"{path}: not readable ({exc})"]) from exc
    try:
        return load_manifest(raw)
    except UnreadableManifest as exc:
        raise manifest_invalid([exc.finding]) from exc


@dataclass(frozen=True)
class PluginManifest:
    """A checked manifest: the raw document plus typed access to what publishing uses."""

    raw: dict[str, Any]
    source_version: str

    def text(self, key: str) -> str | None:
        value = self.raw.get(key)
        return value if isinstance(value, str) else None

    @property
    def id(self) -> str:
        return str(self.raw["id"])

    @property
    def version(self) -> str:
        return str(self.raw["version"])

    @property
    def version_overridden(self) -> bool:
        return self.version != self.source_version

    @property
    def main(self) -> str:
        return str(self.raw["main"])

    @property
    def category(self) -> str:
        return str(self.raw["category"])

    @property
    def type(self) -> str:
        """The declared type; without one, mcp when an MCP server is declared, else tool."""
        declared = self.text("type")
        if declared:
            return declared
        return "mcp" if "mcp" in self.raw else "tool"

    @property
    def config_only(self) -> bool:
        return self.main == ""

    @property
    def icon(self) -> str | None:
        return self.text("icon")

    @property
    def local_icon(self) -> str | None:
        icon = self.icon
        return icon if icon is not None and is_icon_path(icon) else None

    @property
    def ui_entry(self) -> str | None:
        entry = ui_entry(self.raw)
        return entry if isinstance(entry, str) and entry else None

    def string_list(self, key: str) -> list[str] | None:
        value = self.raw.get(key)
        if isinstance(value, list) and all(isinstance(item, str) for item in value):
            return list(value)
        return None


def invalid_category(category: str, categories: Collection[str]) -> CliError:
    known = sorted(set(categories))
    return CliError(
        "PLUGIN_INVALID_CATEGORY",
        f'Invalid category "{category}" (the service knows: {", ".join(known) or "none"})',
        details={"category": category, "allowed": known},
    )


def _category_finding(raw: Mapping[str, Any], categories: Collection[str]) -> list[Finding]:
    category = raw.get("category")
    if not isinstance(category, str) or category in categories:
        return []  # a missing or non-string category is one of the manifest's own findings
    message = invalid_category(category, categories).message
    return [Finding.error(Code.CATEGORY_UNKNOWN, "category", message)]


def load_checked_manifest(
    plugin_dir: Path,
    version_override: str | None = None,
    *,
    for_publish: bool = True,
    categories: Collection[str] | None = None,
) -> PluginManifest:
    """Read, apply `--version`, check; raise ManifestInvalid listing every problem (with
    `categories`, an unknown category among them)."""
    raw = read_manifest(plugin_dir)
    source_version = raw.get("version")
    if version_override is not None:
        raw = {**raw, "version": version_override}
    findings = check_manifest(raw, plugin_dir, for_publish=for_publish)
    errors = [finding for finding in findings if finding.severity == "error"]
    if categories is not None:
        unknown = _category_finding(raw, categories)
        if unknown and not errors:
            raise invalid_category(str(raw["category"]), categories)
        errors += unknown
        findings += unknown
    if errors:
        raise manifest_invalid(findings)
    refuse_secrets(plugin_dir)
    return PluginManifest(raw=raw, source_version=str(source_version))


def refuse_secrets(plugin_dir: Path) -> None:
    """SecretsFound when the folder's files hold a secret (the service's scan, run before
    anything is packed or sent: a token found here never leaves the machine)."""
    findings = secret_findings(listing(plugin_dir, with_traits=True).secrets)
    if findings:
        raise SecretsFound([problem_line(finding) for finding in findings])


def manifest_bytes(manifest: Mapping[str, Any]) -> bytes:
    """The manifest as written into a package when `--version` rewrote it."""
    return (json.dumps(manifest, ensure_ascii=False, indent=2) + "\n").encode("utf-8")
