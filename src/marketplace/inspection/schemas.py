"""Inspection shapes (CONTRACT 13): in version representations and the public endpoint."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from marketplace.kit.schemas import OutputModel
from marketplace.models import InspectionStatus, PluginInspection
from marketplace.publishing.schemas import FindingOut

Status = Literal["queued", "running", "done", "failed", "not_applicable"]


class NetworkAttempt(OutputModel):
    host: str
    port: int | None


class ObservedOut(OutputModel):
    network: list[NetworkAttempt]
    files_written: list[str]
    processes: list[str]
    sensitive_reads: list[str]


class ServerOut(OutputModel):
    name: str | None
    version: str | None
    instructions: str | None


class ToolOut(OutputModel):
    name: str
    description: str | None
    input_schema: Any = Field(json_schema_extra={"type": "object"})
    annotations: Any
    fingerprint: str


class PromptOut(OutputModel):
    name: str
    description: str | None
    arguments: Any
    fingerprint: str


class ResourceOut(OutputModel):
    uri: str
    name: str | None
    description: str | None
    mime_type: str | None


class InspectionOut(OutputModel):
    status: Status
    started_at: datetime | None
    finished_at: datetime | None
    error: str | None
    server: ServerOut | None
    tools: list[ToolOut]
    prompts: list[PromptOut]
    resources: list[ResourceOut]
    observed: ObservedOut
    undeclared: list[str]


EMPTY_OBSERVED: dict[str, list[Any]] = {
    "network": [],
    "filesWritten": [],
    "processes": [],
    "sensitiveReads": [],
}


def inspection_json(row: PluginInspection | None) -> dict[str, Any]:
    """The representation of a version's inspection; no row is `not_applicable`."""
    report = (row.report if row is not None else None) or {}
    return {
        "status": row.status if row is not None else InspectionStatus.NOT_APPLICABLE.value,
        "startedAt": row.started_at if row is not None else None,
        "finishedAt": row.finished_at if row is not None else None,
        "error": row.error if row is not None else None,
        "server": report.get("server"),
        "tools": report.get("tools", []),
        "prompts": report.get("prompts", []),
        "resources": report.get("resources", []),
        "observed": report.get("observed", EMPTY_OBSERVED),
        "undeclared": report.get("undeclared", []),
    }


def inspection_out(row: PluginInspection | None) -> InspectionOut:
    return InspectionOut.model_validate(inspection_json(row))


class ListedItemOut(OutputModel):
    name: str
    description: str | None
    fingerprint: str


class CapabilitiesOut(OutputModel):
    plugin_key: str
    version: str
    status: Status
    server: ServerOut | None
    tools: list[ListedItemOut]
    prompts: list[ListedItemOut]
    declared: list[str]
    observed: ObservedOut
    undeclared: list[str]
    warnings: list[FindingOut] = Field(
        description="The version's findings about text a model reads (CONTRACT 14, the "
        "ai-* codes), in the order the version keeps them: its manifest's, its files', "
        "and its server's instructions, tools and prompts once inspection ended."
    )
