"""One inspection per inspected plugin version (CONTRACT 13): its job state and its report.

A version whose manifest declares no stdio MCP server (or that is config-only) has no row:
its inspection is `not_applicable`. The row is the job's ledger as well as its result: the
queue (huey) only carries the version id, and a worker may run the job only after claiming
the row (status queued, or running with an expired lease) and may finish it only while its
claim holds, so a job killed mid-run is run again and its findings are written once.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import CheckConstraint, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from marketplace.kit.dbtypes import IdType, JSONType, UTCDateTime, utcnow
from marketplace.models.base import Base

MAX_ATTEMPTS = 3


class InspectionStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    NOT_APPLICABLE = "not_applicable"  # never stored: no row


_STORED = ", ".join(
    f"'{s.value}'" for s in InspectionStatus if s != InspectionStatus.NOT_APPLICABLE
)


class PluginInspection(Base):
    __tablename__ = "plugin_inspections"
    __table_args__ = (
        CheckConstraint(f"status IN ({_STORED})", name="status_valid"),
        CheckConstraint(f"attempts >= 0 AND attempts <= {MAX_ATTEMPTS}", name="attempts_bounded"),
        # The sweep's look: running rows whose lease ran out, queued rows never picked up.
        Index("ix_plugin_inspections_status_lease", "status", "lease_until"),
    )

    version_id: Mapped[str] = mapped_column(
        IdType, ForeignKey("plugin_versions.id", ondelete="CASCADE"), primary_key=True
    )
    status: Mapped[str] = mapped_column(String(20), nullable=False)
    attempts: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    # The current attempt's claim: only the holder may finish the job.
    lease_token: Mapped[str | None] = mapped_column(String(36))
    lease_until: Mapped[datetime | None] = mapped_column(UTCDateTime)
    queued_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False, default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    error: Mapped[str | None] = mapped_column(Text)
    # {server, tools, prompts, resources, observed, undeclared} as CONTRACT 13 names them.
    report: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
