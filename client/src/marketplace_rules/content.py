"""Automatic validation (CONTRACT 4): what a manifest says about its package's files, its
configuration items and its text. These findings do not refuse an upload; the service
creates the version and rejects it at once, listing every finding.

The package is anything with `files` (path -> size) and `symlinks` (path -> target), paths
relative to the package root: the service passes what inspect_archive saw, the CLI the
folder it is about to pack. Without a package only the manifest-level findings apply.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from marketplace_rules.findings import FILE_PATH_PREFIX, Code, Finding, item_path
from marketplace_rules.limits import ICON_MAX_BYTES, SYMLINK_HOPS_MAX, TEXT_FINDINGS_MAX
from marketplace_rules.model_text.sources import ModelText
from marketplace_rules.secrets import SecretHit
from marketplace_rules.text import display, forbidden_chars, walk_strings
from marketplace_rules.traits import FileTraits
from marketplace_rules.vocabulary import UI_PERMISSION

_EXTENSION = re.compile(r"\.[A-Za-z0-9]+$")
_DRIVE = re.compile(r"^[A-Za-z]:")

HIDDEN = "contains invisible or bidirectional-control characters"


class PackageFiles(Protocol):
    @property
    def files(self) -> Mapping[str, int]: ...

    @property
    def symlinks(self) -> Mapping[str, str]: ...


@dataclass(frozen=True)
class Listing:
    """A package's files without an archive: a folder about to be packed, or a test's.
    traits: those of its notable files (`rules.traits`), for `rules.files`; model_texts:
    its Markdown and text files as a model reads them (`rules.model_text`), in package
    order, each at `file:<path>`."""

    files: Mapping[str, int]
    symlinks: Mapping[str, str] = field(default_factory=dict)
    traits: Mapping[str, FileTraits] = field(default_factory=dict)
    secrets: Sequence[SecretHit] = ()  # found in its files (`rules.secrets`), masked
    model_texts: Sequence[ModelText] = ()


def content_findings(manifest: Mapping[str, Any], package: PackageFiles | None) -> list[Finding]:
    """Every automatic-validation finding, in the order review notes list them."""
    return [
        *_main_findings(manifest, package),
        *_ui_findings(manifest, package),
        *_icon_findings(manifest, package),
        *config_findings(manifest),
        *text_findings(manifest, package),
    ]


def is_icon_path(icon: str) -> bool:
    """A file of the package (icon/icon.png, logo.svg), as opposed to an icon name or a URL."""
    if is_url(icon):
        return False
    return "/" in icon or "\\" in icon or _EXTENSION.search(icon) is not None


def is_url(icon: str) -> bool:
    return "://" in icon or icon.startswith("data:")


def package_path(value: str) -> str | None:
    """A manifest path relative to the package root, normalised; None if it points outside."""
    path = value.replace("\\", "/")
    if path.startswith("/") or _DRIVE.match(path):
        return None
    parts = [part for part in path.split("/") if part not in ("", ".")]
    if not parts or ".." in parts:
        return None
    return "/".join(parts)


def locate(package: PackageFiles, value: str) -> str | None:
    """The regular file a manifest path leads to, following the package's symlinks."""
    path = package_path(value)
    for _ in range(SYMLINK_HOPS_MAX):
        if path is None or path in package.files:
            return path
        target = package.symlinks.get(path)
        if target is None:
            return None
        path = package_path(posixpath.normpath(posixpath.join(posixpath.dirname(path), target)))
    return None


def _missing_file(path: str, value: str, package: PackageFiles) -> list[Finding]:
    """A finding when value does not name a file of the package; [] when it does."""
    if package_path(value) is None:
        return [
            Finding.error(
                Code.FILE_OUTSIDE,
                path,
                f"{display(value)} is not a relative path inside the package",
            )
        ]
    if locate(package, value) is None:
        return [
            Finding.error(
                Code.FILE_MISSING, path, f"names {display(value)}, which is not in the package"
            )
        ]
    return []


def _main_findings(manifest: Mapping[str, Any], package: PackageFiles | None) -> list[Finding]:
    main = manifest.get("main")
    if package is None or not isinstance(main, str) or not main:
        return []
    return _missing_file("main", main, package)


def _ui_findings(manifest: Mapping[str, Any], package: PackageFiles | None) -> list[Finding]:
    contributes = manifest.get("contributes")
    ui = contributes.get("ui") if isinstance(contributes, dict) else None
    has_ui = ui is not None or "inlineUiCode" in manifest
    findings: list[Finding] = []
    entry = ui.get("entry") if isinstance(ui, dict) else None
    if ui is not None and (not isinstance(entry, str) or not entry):
        findings.append(
            Finding.error(
                Code.UI_ENTRY_REQUIRED, "contributes.ui.entry", "must name the UI bundle file"
            )
        )
    elif isinstance(entry, str) and package is not None:
        findings += _missing_file("contributes.ui.entry", entry, package)
    permissions = manifest.get("permissions")
    if has_ui and not (isinstance(permissions, list) and UI_PERMISSION in permissions):
        findings.append(
            Finding.error(
                Code.PERMISSION_REQUIRED,
                "permissions",
                f'must include "{UI_PERMISSION}" for a UI extension',
            )
        )
    return findings


def _icon_findings(manifest: Mapping[str, Any], package: PackageFiles | None) -> list[Finding]:
    icon = manifest.get("icon")
    if not isinstance(icon, str) or not icon:
        return []
    if is_url(icon):
        return [
            Finding.error(
                Code.ICON_URL,
                "icon",
                "must be a path inside the package or an icon name, not a URL",
            )
        ]
    if not is_icon_path(icon) or package is None:
        return []  # an icon name, or no package to look in
    missing = _missing_file("icon", icon, package)
    if missing:
        return missing
    located = locate(package, icon)
    size = package.files[located] if located else 0
    if size > ICON_MAX_BYTES:
        return [
            Finding.error(
                Code.ICON_TOO_LARGE,
                "icon",
                f"{display(icon)} is {size} bytes; the limit is {ICON_MAX_BYTES}",
            )
        ]
    return []


def config_findings(manifest: Mapping[str, Any]) -> list[Finding]:
    """Configuration items are objects with a key of their own."""
    config = manifest.get("config")
    if not isinstance(config, list):
        return []
    findings: list[Finding] = []
    seen: set[str] = set()
    for index, item in enumerate(config):
        where = item_path("config", index)
        key = item.get("key") if isinstance(item, dict) else None
        if not isinstance(item, dict):
            findings.append(Finding.error(Code.CONFIG_ITEM_INVALID, where, "must be an object"))
        elif not isinstance(key, str) or not key.strip():
            message = "must be a non-empty string"
            findings.append(Finding.error(Code.CONFIG_KEY_MISSING, f"{where}.key", message))
        elif key in seen:
            findings.append(
                Finding.error(
                    Code.CONFIG_KEY_REPEATED, f"{where}.key", f'repeats the key "{display(key)}"'
                )
            )
        else:
            seen.add(key)
    return findings


def text_findings(manifest: Mapping[str, Any], package: PackageFiles | None) -> list[Finding]:
    """Text that hides or reorders what a reviewer reads: manifest strings and key names,
    and the names of the package's files."""
    places: list[tuple[Code, str, str, str]] = [
        (Code.HIDDEN_CHARACTERS_IN_KEY, where, "key name ", text)
        if is_key
        else (Code.HIDDEN_CHARACTERS, where, "", text)
        for where, text, is_key in walk_strings(dict(manifest))
    ]
    if package is not None:
        places += [
            (Code.HIDDEN_CHARACTERS_IN_FILE_NAME, FILE_PATH_PREFIX + name, "name ", name)
            for name in [*package.files, *package.symlinks]
        ]
    findings = [
        Finding.error(code, where, f"{what}{HIDDEN} ({', '.join(chars)})")
        for code, where, what, text in places
        if (chars := forbidden_chars(text))
    ]
    if len(findings) > TEXT_FINDINGS_MAX:
        extra = len(findings) - TEXT_FINDINGS_MAX
        more = Finding.error(Code.HIDDEN_CHARACTERS_MORE, "", f"... and {extra} more such texts")
        findings = [*findings[:TEXT_FINDINGS_MAX], more]
    return findings
