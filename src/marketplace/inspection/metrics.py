"""Inspection metrics for /metrics, read from the ledger (CONTRACT 13): queue depth,
duration and outcome. Read from the database rather than counted in a process, so they are
right whichever API process answers and wherever the inspectors run."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector
from sqlalchemy import ColumnElement, case, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.models import InspectionStatus, PluginInspection

DURATION_BUCKETS = (1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0)


class _Fixed(Collector):
    def __init__(self, families: list[GaugeMetricFamily | HistogramMetricFamily]) -> None:
        self.families = families

    def collect(self) -> list[GaugeMetricFamily | HistogramMetricFamily]:
        return self.families


def _seconds(row: type[PluginInspection]) -> ColumnElement[Any]:
    return func.extract("epoch", row.finished_at) - func.extract("epoch", row.started_at)


async def inspection_metrics(session: AsyncSession) -> bytes:
    row = PluginInspection
    counts = dict(
        (status, int(count))
        for status, count in (
            await session.execute(select(row.status, func.count()).group_by(row.status))
        ).all()
    )
    finished = row.status.in_((InspectionStatus.DONE.value, InspectionStatus.FAILED.value))
    durations = await _durations(session, finished)
    depth = GaugeMetricFamily(
        "marketplace_inspection_queue_depth",
        "Inspections waiting or running, by status",
        labels=["status"],
    )
    outcomes = GaugeMetricFamily(
        "marketplace_inspections_finished",
        "Inspections that ended, by outcome (done or failed)",
        labels=["outcome"],
    )
    for status in (InspectionStatus.QUEUED, InspectionStatus.RUNNING):
        depth.add_metric([status.value], counts.get(status.value, 0))
    for status in (InspectionStatus.DONE, InspectionStatus.FAILED):
        outcomes.add_metric([status.value], counts.get(status.value, 0))
    registry = CollectorRegistry()
    registry.register(_Fixed([depth, outcomes, durations]))
    return bytes(generate_latest(registry))


async def _durations(session: AsyncSession, finished: ColumnElement[bool]) -> HistogramMetricFamily:
    """Run time of finished inspections (start of the last attempt to its end)."""
    row = PluginInspection
    dialect = session.get_bind().dialect.name
    if dialect == "sqlite":
        seconds = (func.julianday(row.finished_at) - func.julianday(row.started_at)) * 86400.0
    else:
        seconds = _seconds(row)
    columns = [func.count(), func.coalesce(func.sum(seconds), 0.0)]
    columns += [func.sum(case((seconds <= bound, 1), else_=0)) for bound in DURATION_BUCKETS]
    result = (
        await session.execute(select(*columns).where(finished, row.started_at.is_not(None)))
    ).one()
    total, seconds_sum, *within = result
    buckets = [
        (str(bound), int(count or 0)) for bound, count in zip(DURATION_BUCKETS, within, strict=True)
    ]
    buckets.append(("+Inf", int(total or 0)))
    return HistogramMetricFamily(
        "marketplace_inspection_duration_seconds",
        "Duration of finished inspections",
        buckets=buckets,
        sum_value=float(seconds_sum or 0.0),
    )
