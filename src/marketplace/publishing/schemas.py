"""Shapes every kind of reviewed item shares: review bodies, status counts, audit records,
version diffs."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import Field, StrictBool

from marketplace.kit.schemas import InputModel, OutputModel, SafeText
from marketplace.models import RolloutState

NOTE_MAX_CHARS = 5000
"""A review note, a reviewer's or the automatic validation's, is at most this long."""

Note = Annotated[SafeText, Field(max_length=NOTE_MAX_CHARS)]


class VersionReviewIn(InputModel):
    approved: StrictBool
    review_note: Note | None = None


class FindingOut(OutputModel):
    """One automatic-check finding (CONTRACT 12): path is a JSON path in the manifest or
    `file:<path>` for a file of the package."""

    code: str
    severity: Literal["error", "warning", "info"]
    path: str
    message: str


class RolloutOut(OutputModel):
    """A version's staged rollout (CONTRACT 16): who is offered it by the update check."""

    percent: int
    state: RolloutState
    halted_reason: str | None
    updated_at: datetime


class StatusCounts(OutputModel):
    """Keyed by the reviewStatus values themselves (seed 4.5), so `taken_down` stays as is."""

    all: int
    pending: int
    approved: int
    rejected: int
    taken_down: Annotated[int, Field(alias="taken_down")]


class AuditDetail(OutputModel):
    resource_type: str
    resource_id: str
    outcome: str
    trigger: str
    note: str | None


class AuditLogOut(OutputModel):
    id: str
    action: str
    actor_id: str | None
    created_at: datetime
    detail: AuditDetail


class AuditLogList(OutputModel):
    items: list[AuditLogOut]
    total: int
    page: int
    limit: int


class VersionRef(OutputModel):
    id: str
    version: str


class FileOut(OutputModel):
    path: str
    size: int


class FileChangeOut(OutputModel):
    path: str
    size_before: int
    size_after: int


class FilesDiff(OutputModel):
    added: list[FileOut]
    removed: list[FileOut]
    changed: list[FileChangeOut]


class ValueChange(OutputModel):
    before: Any
    after: Any


class ManifestDiff(OutputModel):
    """Top-level keys; values as stored (manifest keys are data, never renamed)."""

    added: dict[str, Any]
    removed: dict[str, Any]
    changed: dict[str, ValueChange]


class VersionDiffOut(OutputModel):
    """A version against the last approved version of its item (CONTRACT 12)."""

    base: VersionRef | None
    files: FilesDiff
    manifest: ManifestDiff
    new_permissions: list[str]
