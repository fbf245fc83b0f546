"""What a plugin version does when it runs (CONTRACT 13), as `install`, `update` and `list`
show it, and what the user accepted of it.

The service answers `GET /api/v1/plugins/capabilities/KEY/VERSION` (public) with the
version's inspection: its status, tools and prompts (name, description, fingerprint), the
permissions it declares, what it was observed doing in the sandbox and the permissions that
behaviour needs beyond the declared ones; and `warnings`, the version's findings about text
the model will read (CONTRACT 14: `ai-*` codes), which are shown and never stop anything (a
service older than them leaves the field out: no warnings). Reading it never stops a
command: a service that cannot be reached, refuses, or answers something else makes the
capabilities `unknown`, with the reason. The read has a short timeout of its own and does
not wait out rate limits, so an unreachable or slow service delays an install by seconds,
not minutes.

The registry keeps, per installed plugin, what the user accepted (`Accepted`): the
fingerprints of the tools and prompts and the permissions (declared and undeclared) they
were shown when they installed or agreed to an update, and the descriptions, so that a
change can be shown as before and after. What was accepted is what was shown:

- an inspection that is `done` (or `not_applicable`: there will never be tools to show)
  shows everything, and the record becomes exactly what it showed;
- one that is `queued`, `running` or `failed`, or capabilities that are `unknown`, show
  part of it or nothing; the record keeps what was accepted before and adds what was
  shown. Tools found later are then "more than accepted", which `update` asks about and
  `list` marks.

A registry written before this record existed has none: nothing was accepted, so the first
update asks about every tool and permission the new version has (nothing is assumed to
have been agreed to), and `list` marks such an install once its capabilities show any.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import httpx

from marketplace_client.api import ApiClient, expect_object
from marketplace_client.context import Runtime
from marketplace_client.errors import CliError
from marketplace_rules.grants import granted_by_any
from marketplace_rules.text import display

PATH = "/api/v1/plugins/capabilities"
STATUSES: Final = ("queued", "running", "done", "failed", "not_applicable")
# The inspection is over and its lists are all there will be.
COMPLETE: Final = ("done", "not_applicable")
UNKNOWN: Final = "unknown"
# One read: a few seconds to connect and to answer; no waiting for a rate limit to pass.
TIMEOUT = httpx.Timeout(10.0, connect=5.0)
# Characters of a description kept in the registry and shown before/after a change.
DESCRIPTION_KEPT = 1000
DESCRIPTION_SHOWN = 300
NAME_SHOWN = 80
# A warning's message quotes up to 200 characters of the text, after what it found and
# before a note; its path may name a tool's input property.
WARNING_SHOWN = 500
WARNING_PATH_SHOWN = 200
NAMES_LISTED = 5  # names in a one-line summary; the rest are counted


def capabilities_client(runtime: Runtime, backend: str) -> ApiClient:
    """A public (token-free) client for capability reads, bounded in time."""
    return ApiClient(
        backend, None, transport=runtime.transport, timeout=TIMEOUT, rate_limit_retries=0
    )


# --- what the service says -----------------------------------------------------------------


@dataclass(frozen=True)
class Item:
    """A tool or a prompt."""

    name: str
    description: str | None
    fingerprint: str

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "fingerprint": self.fingerprint}


@dataclass(frozen=True)
class Endpoint:
    """A network attempt: a connection (host, port) or a name look-up (port None)."""

    host: str
    port: int | None

    def shown(self) -> str:
        host = display(self.host, NAME_SHOWN)
        if self.port is None:
            return f"{host} (look-up)"
        return f"[{host}]:{self.port}" if ":" in host else f"{host}:{self.port}"


@dataclass(frozen=True)
class TextWarning:
    """A finding about text the model will read (CONTRACT 14), as the service states it."""

    code: str
    severity: str
    path: str
    message: str

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "severity": self.severity,
            "path": self.path,
            "message": self.message,
        }

    def shown(self) -> str:
        """`severity path: message`, hidden characters escaped, each part capped."""
        return (
            f"{display(self.severity, NAME_SHOWN)} {display(self.path, WARNING_PATH_SHOWN)}: "
            f"{display(self.message, WARNING_SHOWN)}"
        )


@dataclass(frozen=True)
class Capabilities:
    """One version's capabilities; `status` is the inspection's, or `unknown` (then `error`
    says why and the lists are empty)."""

    plugin_key: str
    version: str
    status: str
    server: dict[str, Any] | None = None
    tools: tuple[Item, ...] = ()
    prompts: tuple[Item, ...] = ()
    declared: tuple[str, ...] = ()
    network: tuple[Endpoint, ...] = ()
    files_written: tuple[str, ...] = ()
    processes: tuple[str, ...] = ()
    sensitive_reads: tuple[str, ...] = ()
    undeclared: tuple[str, ...] = ()
    warnings: tuple[TextWarning, ...] = ()
    error: dict[str, Any] | None = None

    @property
    def known(self) -> bool:
        return self.status != UNKNOWN

    @property
    def complete(self) -> bool:
        """Every tool and prompt the version has is listed."""
        return self.status in COMPLETE

    @property
    def permissions(self) -> tuple[str, ...]:
        """What accepting this version grants: declared and undeclared permissions."""
        return tuple(dict.fromkeys((*self.declared, *self.undeclared)))

    def to_json(self) -> dict[str, Any]:
        observed = {
            "network": [{"host": e.host, "port": e.port} for e in self.network],
            "filesWritten": list(self.files_written),
            "processes": list(self.processes),
            "sensitiveReads": list(self.sensitive_reads),
        }
        return {
            "pluginKey": self.plugin_key,
            "version": self.version,
            "status": self.status,
            "server": self.server,
            "tools": [tool.to_json() for tool in self.tools],
            "prompts": [prompt.to_json() for prompt in self.prompts],
            "declared": list(self.declared),
            "observed": observed if self.known else None,
            "undeclared": list(self.undeclared),
            "warnings": [warning.to_json() for warning in self.warnings],
            "error": self.error,
        }


def unknown(plugin_key: str, version: str, error: CliError) -> Capabilities:
    return Capabilities(plugin_key, version, UNKNOWN, error=error.to_json())


def _bad(what: str) -> CliError:
    return CliError("BAD_RESPONSE", f"capabilities: {what}")


def _strings(value: Any, what: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise _bad(f"`{what}` is not a list of strings")
    return tuple(value)


def _items(value: Any, what: str) -> tuple[Item, ...]:
    if not isinstance(value, list):
        raise _bad(f"`{what}` is not a list")
    items: list[Item] = []
    for entry in value:
        if not isinstance(entry, dict):
            raise _bad(f"an entry of `{what}` is not an object")
        name, description, fingerprint = (
            entry.get("name"),
            entry.get("description"),
            entry.get("fingerprint"),
        )
        if not isinstance(name, str) or not isinstance(fingerprint, str):
            raise _bad(f"an entry of `{what}` has no name or fingerprint")
        if description is not None and not isinstance(description, str):
            raise _bad(f"the description of {what} {display(name, NAME_SHOWN)} is not text")
        items.append(Item(name, description, fingerprint))
    return tuple(items)


def _network(value: Any) -> tuple[Endpoint, ...]:
    if not isinstance(value, list):
        raise _bad("`observed.network` is not a list")
    found: list[Endpoint] = []
    for entry in value:
        host = entry.get("host") if isinstance(entry, dict) else None
        port = entry.get("port") if isinstance(entry, dict) else None
        if not isinstance(host, str) or not (
            port is None or (isinstance(port, int) and not isinstance(port, bool))
        ):
            raise _bad("an entry of `observed.network` is not {host, port}")
        found.append(Endpoint(host, port))
    return tuple(found)


def _warnings(value: Any) -> tuple[TextWarning, ...]:
    """`warnings`, absent (a service older than CONTRACT 14) meaning none."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise _bad("`warnings` is not a list")
    found: list[TextWarning] = []
    for entry in value:
        if not isinstance(entry, dict) or not all(
            isinstance(entry.get(key), str) for key in ("code", "severity", "path", "message")
        ):
            raise _bad("an entry of `warnings` is not {code, severity, path, message}")
        found.append(TextWarning(entry["code"], entry["severity"], entry["path"], entry["message"]))
    return tuple(found)


def parse_capabilities(data: Any, plugin_key: str, version: str) -> Capabilities:
    """The service's answer, checked: it must be about this plugin and version."""
    body = expect_object(data, "capabilities")
    if body.get("pluginKey") != plugin_key or body.get("version") != version:
        raise _bad(
            f"the answer is about {display(str(body.get('pluginKey')), NAME_SHOWN)} "
            f"{display(str(body.get('version')), NAME_SHOWN)}, not {plugin_key} {version}"
        )
    status = body.get("status")
    if status not in STATUSES:
        raise _bad(f"unknown inspection status {display(str(status), NAME_SHOWN)}")
    server = body.get("server")
    observed = body.get("observed")
    if not isinstance(observed, dict):
        raise _bad("`observed` is not an object")
    return Capabilities(
        plugin_key=plugin_key,
        version=version,
        status=str(status),
        server=server if isinstance(server, dict) else None,
        tools=_items(body.get("tools"), "tools"),
        prompts=_items(body.get("prompts"), "prompts"),
        declared=_strings(body.get("declared"), "declared"),
        network=_network(observed.get("network")),
        files_written=_strings(observed.get("filesWritten"), "observed.filesWritten"),
        processes=_strings(observed.get("processes"), "observed.processes"),
        sensitive_reads=_strings(observed.get("sensitiveReads"), "observed.sensitiveReads"),
        undeclared=_strings(body.get("undeclared"), "undeclared"),
        warnings=_warnings(body.get("warnings")),
    )


def read_capabilities(api: ApiClient, plugin_key: str, version: str) -> Capabilities:
    """The capabilities of `plugin_key` `version`; `unknown` (with the reason) whenever the
    service cannot say: never an error."""
    try:
        data = api.get(f"{PATH}/{plugin_key}/{version}")
        return parse_capabilities(data, plugin_key, version)
    except CliError as exc:  # ApiError included: unreachable, refused, 5xx
        return unknown(plugin_key, version, exc)


def fetch_capabilities(
    runtime: Runtime, backend: str, plugin_key: str, version: str
) -> Capabilities:
    with capabilities_client(runtime, backend) as api:
        return read_capabilities(api, plugin_key, version)


# --- what the user accepted ----------------------------------------------------------------


def _fingerprints(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {str(k): v for k, v in value.items() if isinstance(v, str)}


def _descriptions(value: Any) -> dict[str, str | None]:
    if not isinstance(value, dict):
        return {}
    return {str(k): v if isinstance(v, str) else None for k, v in value.items()}


def _kept(description: str | None) -> str | None:
    return description[:DESCRIPTION_KEPT] if description is not None else None


@dataclass(frozen=True)
class Accepted:
    """The registry's `accepted` record of one installed plugin."""

    version: str | None
    status: str | None  # the inspection's status when accepted (`unknown` included)
    tools: dict[str, str] = field(default_factory=dict)  # name -> fingerprint
    prompts: dict[str, str] = field(default_factory=dict)
    permissions: tuple[str, ...] = ()
    tool_descriptions: dict[str, str | None] = field(default_factory=dict)
    prompt_descriptions: dict[str, str | None] = field(default_factory=dict)

    @classmethod
    def from_entry(cls, entry: Mapping[str, Any] | None) -> Accepted | None:
        """The record of a registry `plugins` entry; None when it has none (written by a
        client before this record existed) or it is not an object."""
        record = entry.get("accepted") if entry is not None else None
        if not isinstance(record, dict):
            return None
        permissions = record.get("permissions")
        descriptions = record.get("descriptions")
        descriptions = descriptions if isinstance(descriptions, dict) else {}
        version, status = record.get("version"), record.get("status")
        return cls(
            version=version if isinstance(version, str) else None,
            status=status if isinstance(status, str) else None,
            tools=_fingerprints(record.get("tools")),
            prompts=_fingerprints(record.get("prompts")),
            permissions=tuple(p for p in permissions if isinstance(p, str))
            if isinstance(permissions, list)
            else (),
            tool_descriptions=_descriptions(descriptions.get("tools")),
            prompt_descriptions=_descriptions(descriptions.get("prompts")),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "status": self.status,
            "tools": dict(sorted(self.tools.items())),
            "prompts": dict(sorted(self.prompts.items())),
            "permissions": list(self.permissions),
            "descriptions": {
                "tools": dict(sorted(self.tool_descriptions.items())),
                "prompts": dict(sorted(self.prompt_descriptions.items())),
            },
        }


NOTHING_ACCEPTED = Accepted(version=None, status=None)


def accepted_after(previous: Accepted | None, shown: Capabilities) -> Accepted:
    """What the user accepted by installing (or agreeing to update to) the version whose
    capabilities they were `shown` (module doc: complete replaces, partial adds)."""
    tools = {t.name: t.fingerprint for t in shown.tools}
    prompts = {p.name: p.fingerprint for p in shown.prompts}
    tool_text = {t.name: _kept(t.description) for t in shown.tools}
    prompt_text = {p.name: _kept(p.description) for p in shown.prompts}
    permissions: Iterable[str] = shown.permissions
    if not shown.complete and previous is not None:
        tools = previous.tools | tools
        prompts = previous.prompts | prompts
        tool_text = previous.tool_descriptions | tool_text
        prompt_text = previous.prompt_descriptions | prompt_text
        permissions = (*previous.permissions, *shown.permissions)
    return Accepted(
        version=shown.version,
        status=shown.status,
        tools=tools,
        prompts=prompts,
        permissions=tuple(dict.fromkeys(permissions)),
        tool_descriptions=tool_text,
        prompt_descriptions=prompt_text,
    )


# --- what a version has beyond what was accepted -------------------------------------------


@dataclass(frozen=True)
class Changed:
    """A tool or prompt whose fingerprint is not the accepted one."""

    kind: str  # "tool" | "prompt"
    name: str
    before: str | None  # the accepted description (None: none, or not recorded)
    after: str | None
    recorded: bool  # whether the accepted description is known

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "before": self.before, "after": self.after}


@dataclass(frozen=True)
class Beyond:
    """What a version's capabilities have that was not accepted: what `update` asks about
    and `list` marks. Prompts added are not in it (CONTRACT 13 asks about tools added,
    tools and prompts changed, and permissions not covered)."""

    nothing_recorded: bool  # no `accepted` record: every tool and permission counts
    tools_added: tuple[Item, ...] = ()
    tools_changed: tuple[Changed, ...] = ()
    prompts_changed: tuple[Changed, ...] = ()
    permissions: tuple[str, ...] = ()
    # Why the version's capabilities could not be read: nothing could be compared, so the
    # update asks as for a change (its manifest may ask for anything).
    unknown: str | None = None

    def __bool__(self) -> bool:
        return bool(self.tools_added or self.tools_changed or self.prompts_changed) or bool(
            self.permissions or self.unknown
        )

    def summary(self) -> str:
        """One line naming what changed: `adds tool b; changes tool a; asks for fs.write`."""
        parts: list[str] = []
        if self.tools_added:
            parts.append(_named("adds tool", [t.name for t in self.tools_added]))
        if self.tools_changed:
            parts.append(_named("changes tool", [c.name for c in self.tools_changed]))
        if self.prompts_changed:
            parts.append(_named("changes prompt", [c.name for c in self.prompts_changed]))
        if self.permissions:
            parts.append(_named("asks for permission", list(self.permissions)))
        if self.unknown:
            parts.append(f"has capabilities the service could not show ({self.unknown})")
        return "; ".join(parts)

    def lines(self) -> list[str]:
        """Each change on its lines, descriptions before and after (made safe to print)."""
        lines: list[str] = []
        if self.nothing_recorded:
            lines.append(
                "  (nothing was recorded as accepted for this install: it was made by an "
                "older client)"
            )
        if self.unknown:
            lines.append(f"  capabilities unknown: {_text(self.unknown)}")
        for tool in self.tools_added:
            lines.append(f"  tool added: {_name(tool.name)}: {_text(tool.description)}")
        for change in (*self.tools_changed, *self.prompts_changed):
            lines.append(f"  {change.kind} changed: {_name(change.name)}")
            before = _text(change.before) if change.recorded else "(not recorded)"
            after = _text(change.after)
            lines.append(f"    before: {before}")
            lines.append(f"    after:  {after}")
            if change.recorded and change.before == change.after:
                lines.append("    (same description: its input schema or annotations changed)")
        lines += [f"  permission new: {_name(p)}" for p in self.permissions]
        return lines

    def to_json(self) -> dict[str, Any]:
        return {
            "nothingRecorded": self.nothing_recorded,
            "toolsAdded": [tool.to_json() for tool in self.tools_added],
            "toolsChanged": [change.to_json() for change in self.tools_changed],
            "promptsChanged": [change.to_json() for change in self.prompts_changed],
            "permissions": list(self.permissions),
            "summary": self.summary(),
        }


def beyond(accepted: Accepted | None, capabilities: Capabilities) -> Beyond:
    """What `capabilities` show that `accepted` does not hold (None: nothing recorded)."""
    record = accepted or NOTHING_ACCEPTED
    added = tuple(t for t in capabilities.tools if t.name not in record.tools)
    changed = _changed("tool", capabilities.tools, record.tools, record.tool_descriptions)
    prompts = _changed("prompt", capabilities.prompts, record.prompts, record.prompt_descriptions)
    permissions = tuple(
        p for p in capabilities.permissions if not granted_by_any(record.permissions, p)
    )
    return Beyond(accepted is None, added, changed, prompts, permissions)


def _changed(
    kind: str,
    items: tuple[Item, ...],
    fingerprints: Mapping[str, str],
    descriptions: Mapping[str, str | None],
) -> tuple[Changed, ...]:
    return tuple(
        Changed(
            kind,
            item.name,
            descriptions.get(item.name),
            item.description,
            item.name in descriptions,
        )
        for item in items
        if item.name in fingerprints and fingerprints[item.name] != item.fingerprint
    )


# --- words -------------------------------------------------------------------------------


def _name(text: str) -> str:
    return display(text, NAME_SHOWN)


def _text(description: str | None) -> str:
    """A whole description on one line, unprintables (newlines too) escaped, capped."""
    if description is None or not description.strip():
        return "(no description)"
    return display(description.strip(), DESCRIPTION_SHOWN)


def first_line(description: str | None) -> str:
    lines = (description or "").strip().splitlines()
    return display(lines[0].strip(), DESCRIPTION_SHOWN) if lines else "(no description)"


def _named(label: str, names: list[str]) -> str:
    """`adds tool a` / `adds tools a, b and 4 more`."""
    shown = [_name(n) for n in names[:NAMES_LISTED]]
    extra = len(names) - NAMES_LISTED
    listed = ", ".join(shown) + (f" and {extra} more" if extra > 0 else "")
    return f"{label}{'s' if len(names) > 1 else ''} {listed}"


def _listed(values: Iterable[str]) -> str:
    shown = [_name(value) for value in values]
    return ", ".join(shown) if shown else "none"


NOT_YET = {
    "queued": "queued: its tools and what it does when it runs are not known yet",
    "running": "running: its tools and what it does when it runs are not known yet",
    "failed": "failed: its tools and what it does when it runs are not known",
    "not_applicable": "not applicable (no stdio MCP server to run): it has no tools to show",
}


def unknown_reason(capabilities: Capabilities) -> str:
    """Why capabilities are unknown, in one line (code, message, HTTP status)."""
    error = capabilities.error or {}
    reason = f"{error.get('code')}: {error.get('message')}"
    if error.get("status"):
        reason += f" (HTTP {error['status']})"
    return reason


def capability_lines(capabilities: Capabilities) -> list[str]:
    """The human summary `install` and `update` print (strings from the plugin escaped)."""
    what = f"{capabilities.plugin_key} {capabilities.version}"
    if not capabilities.known:
        reason = unknown_reason(capabilities)
        return [f"Capabilities of {what}: unknown (the service did not say: {display(reason)})"]
    if capabilities.status != "done":
        lines = [f"Inspection of {what}: {NOT_YET[capabilities.status]}"]
    else:
        server = capabilities.server or {}
        title = " ".join(
            display(str(server[k]), NAME_SHOWN) for k in ("name", "version") if server.get(k)
        )
        lines = [f"Inspection of {what}: done" + (f" (server {title})" if title else "")]
        lines += _item_lines("Tools", capabilities.tools)
        lines += _item_lines("Prompts", capabilities.prompts)
    lines.append(f"Permissions declared: {_listed(capabilities.declared)}")
    if capabilities.status == "done":
        lines += [
            "Observed when run in the sandbox:",
            f"  network: {', '.join(e.shown() for e in capabilities.network) or 'none'}",
            f"  files written: {_listed(capabilities.files_written)}",
            f"  programs: {_listed(capabilities.processes)}",
            f"  sensitive reads: {_listed(capabilities.sensitive_reads)}",
        ]
    if capabilities.undeclared:
        lines.append(f"Observed but not declared: {_listed(capabilities.undeclared)}")
    return lines + warning_lines(capabilities)


WARNINGS_HEADING: Final = "Warnings about text the model will read:"


def warning_lines(capabilities: Capabilities) -> list[str]:
    """The version's warnings (CONTRACT 14) under their heading; nothing when it has none."""
    if not capabilities.warnings:
        return []
    return [WARNINGS_HEADING] + [f"  {warning.shown()}" for warning in capabilities.warnings]


def _item_lines(label: str, items: tuple[Item, ...]) -> list[str]:
    if not items:
        return [f"{label}: none"]
    width = max(len(_name(item.name)) for item in items)
    return [f"{label}: {len(items)}"] + [
        f"  {_name(item.name):<{width}}  {first_line(item.description)}" for item in items
    ]
