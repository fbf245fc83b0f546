"""One corpus of manifests through both paths: the publishing tool's local check and the
service's upload and create-version checks. They must find the same things.

The tool's path is the real one: manifest.json read from a folder (read_manifest), checked
against the files its package would hold (check_manifest). The service's path is the real
one too: the folder packed by the tool, the package inspected as the upload endpoint does
(inspect_archive), then the structural steps in the contract's order and automatic
validation (deep_findings); a case without a package goes the create-version way.

The service exposes a refusal (code, message, details) or review-note lines; the tool
exposes findings. The tool's first finding must be the service's refusal, and without a
refusal the tool's findings must be the note's lines, one for one. On top the tool has
rules for the plugin record it builds from the manifest (record_findings, the pluginKey
shape), which the service applies when that record is published, not here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from marketplace.errors import AppError, PackageInvalid, ValidationFailed
from marketplace.packages.archive import ArchiveError, ArchiveLimits, inspect_archive
from marketplace.packages.manifest import (
    check_manifest_category,
    check_manifest_identity,
    check_manifest_shape,
    deep_findings,
    distribution_of,
    note_line,
    refusal,
)
from marketplace_client.errors import ManifestInvalid
from marketplace_client.manifest_check import PluginManifest, check_manifest, read_manifest
from marketplace_client.pack import pack
from marketplace_rules.findings import Code, Finding
from marketplace_rules.limits import ICON_MAX_BYTES, MANIFEST_MAX_DEPTH, MIB, PLUGIN_PACKAGE_MAX_MIB
from marketplace_rules.manifest import record_findings
from marketplace_rules.model_text import AI_CODES
from marketplace_rules.vocabulary import PLUGIN_TYPES

CATEGORIES = {"productivity", "development", "utility"}
INDEX = {"index.js": b"export default () => 42;\n"}
STDIO = {"command": "node", "args": ["server.js"], "env": {"MODE": "prod"}}
PNG = b"\x89PNG\r\n\x1a\n"


def manifest(**overrides: Any) -> dict[str, Any]:
    """A valid tool manifest; an override of None removes the key."""
    base: dict[str, Any] = {
        "id": "demo-plugin",
        "version": "1.0.0",
        "name": "Demo",
        "description": "A demo plugin",
        "type": "tool",
        "main": "index.js",
        "category": "productivity",
    }
    base.update(overrides)
    return {key: value for key, value in base.items() if value is not None}


def config_only(**overrides: Any) -> dict[str, Any]:
    return manifest(**{"main": "", "type": "mcp", "mcp": STDIO, **overrides})


@dataclass(frozen=True)
class Case:
    name: str
    document: dict[str, Any] | bytes
    # The package's files besides manifest.json; None: no package (create-version).
    files: dict[str, bytes] | None = field(default_factory=lambda: dict(INDEX))
    # The first finding both sides share (None: nothing to find), and the tool's own extras.
    first: Code | None = None
    client_only: tuple[Code, ...] = ()

    @property
    def package(self) -> bool:
        return self.files is not None


GOOD = [
    Case("tool-tarball", manifest()),
    *[
        Case(f"type-{kind}", manifest(type=kind, **({"mcp": STDIO} if kind == "mcp" else {})))
        for kind in PLUGIN_TYPES
    ],
    Case("mcp-stdio-config-only", config_only(), files=None),
    Case(
        "mcp-remote-config-only",
        config_only(mcp={"transport": "sse", "url": "https://mcp.example/sse"}),
        files=None,
    ),
    Case(
        "mcp-streamable-http-tarball",
        manifest(type="mcp", mcp={"transport": "streamable-http", "url": "http://127.0.0.1:1/mcp"}),
    ),
    Case("inline-code", manifest(inlineCode="export default 1;"), files=None),
    Case(
        "ui-extension-with-icon",
        manifest(
            icon="icon/icon.png",
            permissions=["ui.render"],
            contributes={"ui": {"entry": "dist/ui.js"}},
        ),
        files={**INDEX, "dist/ui.js": b"ui", "icon/icon.png": PNG},
    ),
    Case("icon-name", manifest(icon="database")),
    Case(
        "icon-of-exactly-the-limit",
        manifest(icon="icon.png"),
        files={**INDEX, "icon.png": PNG.ljust(ICON_MAX_BYTES, b"\0")},
    ),
    Case(
        "config-items",
        manifest(
            config=[
                {"key": "API_KEY", "label": "Key", "required": True, "secret": True},
                {"key": "REGION", "default": "cn", "description": "Where"},
            ]
        ),
    ),
    Case("prerelease", manifest(version="1.0.0-alpha.10")),
    Case(
        "chinese-emoji-and-joiners-in-words",
        manifest(name="天气插件 👩‍💻", description="فارسی\u200cها and हिन्दी"),
    ),
    Case("unknown-keys-kept", manifest(extra={"anything": [1, 2.5, None, True]})),
    # The manifest is level 1: `extra` may nest MANIFEST_MAX_DEPTH - 1 levels.
    Case(
        "nesting-at-the-limit",
        manifest(extra=json.loads("[" * (MANIFEST_MAX_DEPTH - 1) + "]" * (MANIFEST_MAX_DEPTH - 1))),
    ),
    Case(
        "nesting-too-deep",
        manifest(extra=json.loads("[" * 500 + "]" * 500)),
        first=Code.MANIFEST_TOO_DEEP,
    ),
    Case("main-with-dot-slash", manifest(main="./index.js")),
]

DOCUMENT = [
    Case("not-json", b"{not json", first=Code.MANIFEST_NOT_JSON),
    Case("repeated-key", b'{"id": "a", "id": "b"}', first=Code.MANIFEST_REPEATED_KEY),
    Case("not-an-object", b"[1, 2]", first=Code.MANIFEST_NOT_OBJECT),
    Case("not-utf8", b'{"id": "\xff"}', first=Code.MANIFEST_NOT_UTF8),
    Case("nan-constant", b'{"id": NaN}', first=Code.MANIFEST_NOT_JSON),
    Case(
        "nesting-past-the-recursion-limit",
        b'{"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        first=Code.MANIFEST_NOT_JSON,
    ),
    Case(
        "integer-past-64-bits",
        json.dumps(manifest(limits={"max": 10**30})).encode(),
        first=Code.MANIFEST_UNSAFE_NUMBER,
    ),
    Case("float-overflow", b'{"id": "demo-plugin", "n": 1e400}', first=Code.MANIFEST_UNSAFE_NUMBER),
    Case(
        "nul-in-text",
        json.dumps(manifest(description="a\u0000b")).encode(),
        first=Code.MANIFEST_UNSTORABLE_TEXT,
    ),
    Case(
        "lone-surrogate",
        json.dumps(manifest()).encode()[:-1] + b', "note": "\\ud800"}',
        first=Code.MANIFEST_UNSTORABLE_TEXT,
    ),
]

STRUCTURE = [
    Case("id-missing", manifest(id=None), first=Code.REQUIRED),
    Case("id-not-a-string", manifest(id=123), first=Code.WRONG_TYPE),
    Case(
        "id-not-a-plugin-key",
        manifest(id="Bad_Id"),
        client_only=(Code.PLUGIN_KEY_INVALID,),
    ),
    Case("version-missing", manifest(version=None), first=Code.REQUIRED),
    Case("version-not-semver", manifest(version="1.0"), first=Code.VERSION_INVALID),
    Case("version-with-build", manifest(version="1.0.0+build.5"), first=Code.VERSION_INVALID),
    Case("version-leading-zero", manifest(version="01.0.0"), first=Code.VERSION_INVALID),
    Case("version-overlong", manifest(version="1.0.0-" + "a" * 200), first=Code.VERSION_INVALID),
    Case("version-arabic-digits", manifest(version="١.٠.٠"), first=Code.VERSION_INVALID),
    Case("category-missing", manifest(category=None), first=Code.REQUIRED),
    Case("category-not-a-string", manifest(category=["ai"]), first=Code.WRONG_TYPE),
    Case("main-missing", manifest(main=None), first=Code.REQUIRED),
    Case("main-not-a-string", manifest(main=False), first=Code.WRONG_TYPE),
    Case("permissions-not-a-list", manifest(permissions="ui.render"), first=Code.WRONG_TYPE),
    Case("permissions-not-strings", manifest(permissions=[1]), first=Code.WRONG_TYPE),
    Case("auto-connect-not-a-boolean", manifest(autoConnect="yes"), first=Code.WRONG_TYPE),
    Case("contributes-not-an-object", manifest(contributes=[]), first=Code.WRONG_TYPE),
    Case("config-not-a-list", manifest(config={"key": "A"}), first=Code.WRONG_TYPE),
    Case("name-not-a-string", manifest(name=5), first=Code.WRONG_TYPE),
    Case("mcp-not-an-object", manifest(mcp="node server.js"), first=Code.WRONG_TYPE),
    Case("mcp-command-blank", manifest(mcp={"command": "   "}), first=Code.MCP_INVALID),
    Case(
        "mcp-args-and-env-wrong",
        manifest(mcp={"command": "node", "args": "a b", "env": {"PORT": 80}}),
        first=Code.MCP_INVALID,
    ),
    Case("mcp-sse-without-url", manifest(mcp={"transport": "sse"}), first=Code.MCP_INVALID),
    Case(
        "mcp-url-not-http",
        manifest(mcp={"transport": "sse", "url": "ftp://x"}),
        first=Code.MCP_INVALID,
    ),
    Case(
        "mcp-unknown-transport",
        manifest(mcp={"transport": "websocket", "url": "ws://x"}),
        first=Code.MCP_INVALID,
    ),
    Case("type-mcp-without-mcp", manifest(type="mcp"), first=Code.MCP_REQUIRED),
    Case(
        "config-only-without-mcp",
        manifest(main="", type="tool"),
        files=None,
        first=Code.DISTRIBUTION_NONE,
    ),
    Case(
        "config-only-with-invalid-mcp",
        config_only(mcp={"transport": "sse"}),
        files=None,
        first=Code.MCP_INVALID,
    ),
    Case(
        "missing-id-before-bad-mcp",
        manifest(id=None, mcp={"command": ""}, category=None),
        first=Code.REQUIRED,
    ),
]

CONTENT = [
    Case("main-not-in-package", manifest(main="dist/index.js"), first=Code.FILE_MISSING),
    Case("main-outside-package", manifest(main="../index.js"), first=Code.FILE_OUTSIDE),
    Case(
        "main-in-node-modules-is-not-packed",
        manifest(main="node_modules/server/index.js"),
        files={**INDEX, "node_modules/server/index.js": b"x"},
        first=Code.FILE_MISSING,
    ),
    Case(
        "ui-entry-not-in-package",
        manifest(contributes={"ui": {"entry": "ui.js"}}, permissions=["ui.render"]),
        first=Code.FILE_MISSING,
    ),
    Case(
        "ui-without-entry",
        manifest(contributes={"ui": {}}, permissions=["ui.render"]),
        first=Code.UI_ENTRY_REQUIRED,
    ),
    Case(
        "ui-without-permission",
        manifest(contributes={"ui": {"entry": "ui.js"}}),
        files={**INDEX, "ui.js": b"ui"},
        first=Code.PERMISSION_REQUIRED,
    ),
    Case(
        "inline-ui-without-permission",
        manifest(inlineUiCode="export {}"),
        files=None,
        first=Code.PERMISSION_REQUIRED,
    ),
    Case("icon-url", manifest(icon="https://tracker.example/p.png"), first=Code.ICON_URL),
    Case("icon-not-in-package", manifest(icon="icon/icon.png"), first=Code.FILE_MISSING),
    Case(
        "icon-over-the-limit",
        manifest(icon="icon/icon.png"),
        files={**INDEX, "icon/icon.png": PNG.ljust(ICON_MAX_BYTES + 1, b"\0")},
        first=Code.ICON_TOO_LARGE,
    ),
    Case("config-item-not-an-object", manifest(config=["TOKEN"]), first=Code.CONFIG_ITEM_INVALID),
    Case(
        "config-key-missing-blank-and-repeated",
        manifest(config=[{"key": "A"}, {"label": "no key"}, {"key": " "}, {"key": "A"}]),
        first=Code.CONFIG_KEY_MISSING,
    ),
    Case(
        "config-item-field-types",
        manifest(config=[{"key": "A", "label": 1, "secret": "yes"}]),
        client_only=(Code.WRONG_TYPE, Code.WRONG_TYPE),
    ),
    Case(
        "bidi-override-in-description",
        manifest(description="safe\u202etxt.exe"),
        first=Code.HIDDEN_CHARACTERS,
    ),
    Case(
        "zero-width-in-key-name",
        manifest(**{"na\u200bme": "x"}),
        first=Code.HIDDEN_CHARACTERS_IN_KEY,
    ),
    Case(
        "hidden-character-deep-in-a-list",
        manifest(extra={"a": [{"b": ["ok", "es\x1bc"]}]}),
        first=Code.HIDDEN_CHARACTERS,
    ),
    Case(
        "hidden-character-in-a-file-name",
        manifest(),
        files={**INDEX, "photo\u202egnp.js": b"x"},
        first=Code.HIDDEN_CHARACTERS_IN_FILE_NAME,
    ),
    Case(
        "trojan-source-in-inline-code",
        manifest(inlineCode="if (a) { /* \u202e } \u2066if (b)\u2069 */ }"),
        files=None,
        first=Code.HIDDEN_CHARACTERS,
    ),
    Case(
        "many-hidden-texts-are-capped",
        manifest(config=[{"key": f"k{index}", "label": "\u200b"} for index in range(25)]),
        first=Code.HIDDEN_CHARACTERS,
    ),
    Case(
        "every-kind-of-finding-together",
        manifest(
            main="missing.js",
            icon="icon.png",
            contributes={"ui": {"entry": "ui.js"}},
            config=[{}],
            name="x\u200fy",
        ),
        first=Code.FILE_MISSING,
    ),
]

RECORD = [
    Case("type-unknown", manifest(type="gadget"), client_only=(Code.TYPE_UNKNOWN,)),
    Case(
        "name-and-description-missing",
        manifest(name=None, description=" "),
        client_only=(Code.REQUIRED, Code.REQUIRED),
    ),
    Case(
        "tags-and-platforms",
        manifest(tags="a,b", platforms=["linux", "beos"]),
        client_only=(Code.WRONG_TYPE, Code.PLATFORM_UNKNOWN),
    ),
    Case(
        "icon-file-not-an-image-type",
        manifest(icon="icon/icon.gif"),
        files={**INDEX, "icon/icon.gif": b"GIF89a"},
        client_only=(Code.ICON_FORMAT,),
    ),
]

CORPUS = [*GOOD, *DOCUMENT, *STRUCTURE, *CONTENT, *RECORD]


def write_folder(root: Path, case: Case) -> Path:
    folder = root / "plugin"
    folder.mkdir()
    document = case.document
    raw = document if isinstance(document, bytes) else json.dumps(document).encode()
    (folder / "manifest.json").write_bytes(raw)
    for name, data in (case.files or {}).items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return folder


# ---------- the two paths ----------


def client_path(folder: Path, case: Case) -> tuple[dict[str, Any] | None, list[Finding]]:
    """The publishing tool: read manifest.json, check it against the package-to-be."""
    try:
        document = read_manifest(folder)
    except ManifestInvalid as exc:
        return None, [Finding(Code(f["code"]), **_rest(f)) for f in exc.details["findings"]]
    return document, check_manifest(document, folder if case.package else None)


def _rest(found: dict[str, str]) -> dict[str, Any]:
    return {"severity": found["severity"], "path": found["path"], "message": found["message"]}


@dataclass(frozen=True)
class ServiceOutcome:
    refused: tuple[str, str, dict[str, Any]] | None = None
    notes: list[str] = field(default_factory=list)


def _refused(error: AppError) -> ServiceOutcome:
    return ServiceOutcome(refused=(error.code, error.message, error.details))


def service_path(folder: Path, case: Case, scratch: Path) -> ServiceOutcome:
    """The service: inspect the uploaded package (or take the create-version manifest),
    then the structural steps in the contract's order, then automatic validation."""
    info = None
    if case.package:
        packed = pack(folder, scratch / "plugin.tar.gz")
        limits = ArchiveLimits.for_package(PLUGIN_PACKAGE_MAX_MIB * MIB)
        try:
            with packed.path.open("rb") as upload:
                info = inspect_archive(upload, limits)
        except ArchiveError as exc:  # the upload endpoint answers PackageInvalid(message)
            return _refused(PackageInvalid(exc.message))
        assert info.manifest is not None
        document: dict[str, Any] = info.manifest
    else:
        assert isinstance(case.document, dict)
        document = case.document
    # The tool creates the plugin from the manifest and sends the manifest's version.
    plugin_key = document.get("id") if isinstance(document.get("id"), str) else "demo-plugin"
    version = document.get("version") if isinstance(document.get("version"), str) else "1.0.0"
    kind = PluginManifest(document, version).type
    try:
        check_manifest_identity(document, plugin_key=plugin_key, version=version)
        check_manifest_category(document, categories=CATEGORIES)
        check_manifest_shape(document, plugin_type=kind if kind in PLUGIN_TYPES else None)
        if not case.package:
            distribution_of(document, has_package=False)
    except AppError as exc:
        return _refused(exc)
    return ServiceOutcome(notes=deep_findings(document, info))


# ---------- the comparison ----------


@pytest.mark.parametrize("case", CORPUS, ids=[case.name for case in CORPUS])
def test_client_and_service_find_the_same(case: Case, tmp_path: Path) -> None:
    folder = write_folder(tmp_path, case)
    scratch = tmp_path / "scratch"
    scratch.mkdir()

    document, client = client_path(folder, case)
    service = service_path(folder, case, scratch)

    extra = record_findings(document) if document is not None else []
    shared = [f for f in client if f not in extra and f.code is not Code.PLUGIN_KEY_INVALID]
    assert [f.code for f in client if f not in shared] == list(case.client_only)
    assert (shared[0].code if shared else None) is case.first
    if service.refused is not None:
        # create-version answers VALIDATION_FAILED for a manifest that fits no distribution.
        error = ValidationFailed if shared[0].code is Code.DISTRIBUTION_NONE else PackageInvalid
        expected = refusal(shared, error)
        assert service.refused == (expected.code, expected.message, expected.details)
    else:
        assert service.notes == [note_line(f) for f in shared]


def test_corpus_covers_every_shared_rule() -> None:
    """Each code both sides apply appears as some case's first finding or in its notes."""
    covered = {case.first for case in CORPUS} | {c for case in CORPUS for c in case.client_only}
    never_first = {
        # Reached only after another finding of the same case, or not by a manifest alone.
        Code.ID_MISMATCH,
        Code.VERSION_MISMATCH,
        Code.CATEGORY_UNKNOWN,
        Code.CONFIG_KEY_REPEATED,
        Code.HIDDEN_CHARACTERS_MORE,
        Code.ICON_EMPTY,
        Code.PLUGIN_KEY_INVALID,
    }
    # Warnings and infos for the reviewer, never a refusal nor a line of the note: their
    # own tests are tests/rules/test_files.py, test_changes.py and test_review.py.
    for_the_reviewer = {
        Code.FILE_EXECUTABLE,
        Code.FILE_NATIVE_BINARY,
        Code.FILE_LARGE,
        Code.SCRIPT_MINIFIED,
        Code.SCRIPT_OBFUSCATED,
        Code.SCRIPT_RUNS_DOWNLOAD,
        Code.PERMISSIONS_REQUESTED,
        Code.PERMISSION_ADDED,
        Code.PERMISSION_WIDENED,
        Code.MCP_LAUNCH_CHANGED,
        Code.CONFIG_SECRET_ADDED,
        Code.CONFIG_REQUIRED_ADDED,
        Code.FINDINGS_MORE,
    }
    # Secrets are scanned outside the manifest checks compared here (rules.secrets): their
    # own tests are tests/rules/test_secrets.py and tests/publishing/test_secret_scan.py.
    scanned = {Code.SECRET, Code.MARKETPLACE_TOKEN}
    # The package publish would send, judged by `marketplace validate` alone (the service
    # refuses a package over its limit with a 413 before any rule runs): tests/cli.
    tool_only = {Code.PACKAGE_TOO_LARGE, Code.PACKAGE_INVALID, Code.FILE_LEFT_OUT}
    # What the server does when it runs (CONTRACT 13): found by the inspection, after the
    # upload; its own tests are tests/inspection.
    inspected = {
        Code.CAPABILITY_UNDECLARED,
        Code.INSPECTION_FAILED,
        Code.TOOL_ADDED,
        Code.TOOL_REMOVED,
        Code.TOOL_CHANGED,
        Code.PROMPT_CHANGED,
        Code.INSTRUCTIONS_CHANGED,
    }
    # Text a model reads (CONTRACT 14): warnings and infos for the reviewer, never a
    # refusal nor a line of the note; validate against the service:
    # tests/plugins/test_model_text_findings.py and tests/cli/test_validate_agrees_with_service.py.
    model_text = set(AI_CODES)
    rest = set(Code) - covered - never_first - for_the_reviewer - scanned - tool_only
    assert rest - inspected - model_text == set()
    assert len(CORPUS) >= 30
