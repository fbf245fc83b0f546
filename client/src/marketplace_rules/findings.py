"""A finding: one problem a rule found, in a shape people and programs can both use."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Literal

Severity = Literal["error", "warning", "info"]
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "info")
"""Most serious first: the order findings are stored and listed in."""

FILE_PATH_PREFIX = "file:"
"""Paths of findings about a file of the package, not a place in the manifest."""


class Code(enum.StrEnum):
    """What is wrong, independent of where (the path says where)."""

    # manifest.json as a document
    MANIFEST_NOT_UTF8 = "manifest-not-utf8"
    MANIFEST_NOT_JSON = "manifest-not-json"
    MANIFEST_REPEATED_KEY = "manifest-repeated-key"
    MANIFEST_NOT_OBJECT = "manifest-not-object"
    MANIFEST_UNSTORABLE_TEXT = "manifest-unstorable-text"
    MANIFEST_UNSAFE_NUMBER = "manifest-unsafe-number"
    MANIFEST_TOO_DEEP = "manifest-too-deep"
    # fields
    REQUIRED = "required"
    WRONG_TYPE = "wrong-type"
    ID_MISMATCH = "id-mismatch"
    VERSION_MISMATCH = "version-mismatch"
    VERSION_INVALID = "version-invalid"
    PLUGIN_KEY_INVALID = "plugin-key-invalid"
    CATEGORY_UNKNOWN = "category-unknown"
    TYPE_UNKNOWN = "type-unknown"
    PLATFORM_UNKNOWN = "platform-unknown"
    MCP_INVALID = "mcp-invalid"
    MCP_REQUIRED = "mcp-required"
    DISTRIBUTION_NONE = "distribution-none"
    # content, against the package's files (CONTRACT 4, automatic validation)
    FILE_OUTSIDE = "file-outside"
    FILE_MISSING = "file-missing"
    UI_ENTRY_REQUIRED = "ui-entry-required"
    PERMISSION_REQUIRED = "permission-required"
    ICON_URL = "icon-url"
    ICON_TOO_LARGE = "icon-too-large"
    ICON_FORMAT = "icon-format"
    ICON_EMPTY = "icon-empty"
    CONFIG_ITEM_INVALID = "config-item-invalid"
    CONFIG_KEY_MISSING = "config-key-missing"
    CONFIG_KEY_REPEATED = "config-key-repeated"
    HIDDEN_CHARACTERS = "hidden-characters"
    HIDDEN_CHARACTERS_IN_KEY = "hidden-characters-in-key"
    HIDDEN_CHARACTERS_IN_FILE_NAME = "hidden-characters-in-file-name"
    HIDDEN_CHARACTERS_MORE = "hidden-characters-more"
    # the package `publish` would send, as `marketplace validate` judges it (the tool only)
    PACKAGE_TOO_LARGE = "package-too-large"
    PACKAGE_INVALID = "package-invalid"
    FILE_LEFT_OUT = "file-left-out"
    # for the reviewer (CONTRACT 12): the package's files (rules.files)
    FILE_EXECUTABLE = "file-executable"
    FILE_NATIVE_BINARY = "file-native-binary"
    FILE_LARGE = "file-large"
    SCRIPT_MINIFIED = "script-minified"
    SCRIPT_OBFUSCATED = "script-obfuscated"
    SCRIPT_RUNS_DOWNLOAD = "script-runs-download"
    # secrets in the manifest or the package's files (rules.secrets); errors
    SECRET = "secret-found"  # noqa: S105 - a code, not a password
    MARKETPLACE_TOKEN = "marketplace-token"  # noqa: S105 - a code, not a password
    # for the reviewer: against the last approved version (rules.changes)
    PERMISSIONS_REQUESTED = "permissions-requested"
    PERMISSION_ADDED = "permission-added"
    PERMISSION_WIDENED = "permission-widened"
    MCP_LAUNCH_CHANGED = "mcp-launch-changed"
    CONFIG_SECRET_ADDED = "config-secret-added"  # noqa: S105 - a code, not a password
    CONFIG_REQUIRED_ADDED = "config-required-added"
    # the list itself (rules.review)
    # Inspection (CONTRACT 13): what the server did in the sandbox and offers the model.
    CAPABILITY_UNDECLARED = "capability-undeclared"
    INSPECTION_FAILED = "inspection-failed"
    TOOL_ADDED = "tool-added"
    TOOL_REMOVED = "tool-removed"
    TOOL_CHANGED = "tool-changed"
    PROMPT_CHANGED = "prompt-changed"
    INSTRUCTIONS_CHANGED = "instructions-changed"
    # Text that speaks to the model (CONTRACT 14; rules.model_text)
    AI_INSTRUCTION_OVERRIDE = "ai-instruction-override"
    AI_CONCEALMENT = "ai-concealment"
    AI_SENSITIVE_DATA = "ai-sensitive-data"
    AI_EXFILTRATION = "ai-exfiltration"
    AI_TOOL_SHADOWING = "ai-tool-shadowing"
    AI_HIDDEN_MARKUP = "ai-hidden-markup"
    AI_COERCION = "ai-coercion"

    FINDINGS_MORE = "findings-more"


@dataclass(frozen=True, slots=True)
class Finding:
    """code: what (a Code); path: where, as a JSON path in the manifest (`mcp.command`,
    `config[2].key`; "" for the manifest as a whole) or `file:<path>` for a file of the
    package; message: the problem, to be read after the path, safe to print (hidden
    characters escaped). path holds keys exactly as the manifest has them: escape it
    (`rules.text.display`) before printing it.
    """

    code: Code
    severity: Severity
    path: str
    message: str

    @classmethod
    def error(cls, code: Code, path: str, message: str) -> Finding:
        return cls(code, "error", path, message)

    @classmethod
    def warning(cls, code: Code, path: str, message: str) -> Finding:
        """Does not reject; the reviewer should look."""
        return cls(code, "warning", path, message)

    @classmethod
    def info(cls, code: Code, path: str, message: str) -> Finding:
        """Context for the reviewer."""
        return cls(code, "info", path, message)

    def to_json(self) -> dict[str, str]:
        return {
            "code": str(self.code),
            "severity": self.severity,
            "path": self.path,
            "message": self.message,
        }


def join_path(parent: str, key: str) -> str:
    """The JSON path of a member: `mcp` + `command` -> `mcp.command`."""
    return f"{parent}.{key}" if parent else key


def item_path(parent: str, index: int) -> str:
    return f"{parent}[{index}]"
