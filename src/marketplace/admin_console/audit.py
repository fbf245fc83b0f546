"""The audit log, filtered by action, resource type, actor and date range, newest first."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from math import ceil
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import Query, Request, Response
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.admin_console.history import named_audit_page
from marketplace.admin_console.kinds import AUDIT_LINKS, PLUGIN_PAGES, SCENARIO_PAGES
from marketplace.db import DbSession
from marketplace.kit.pagination import Page
from marketplace.kit.sql import is_row_id
from marketplace.models import User
from marketplace.publishing.audit import Action, audit_query, count_of
from marketplace.web.deps import SignedInAccount
from marketplace.web.http import page, site_router
from marketplace.web.sites import CONSOLE

router = site_router(CONSOLE)

PAGE_SIZE = 50
ACTIONS = [a.value for a in Action]
RESOURCE_TYPES = [
    PLUGIN_PAGES.kind.name,
    PLUGIN_PAGES.kind.version_resource,
    SCENARIO_PAGES.kind.name,
    SCENARIO_PAGES.kind.version_resource,
]

Text = Annotated[str, Query(max_length=320)]


@dataclass(frozen=True)
class Filters:
    action: str = ""
    resource_type: str = ""
    actor: str = ""
    date_from: str = ""
    date_to: str = ""

    def page_base(self) -> str:
        """This filter's address, ready for "page=N"."""
        values = {
            "action": self.action,
            "resourceType": self.resource_type,
            "actor": self.actor,
            "from": self.date_from,
            "to": self.date_to,
        }
        kept = urlencode({k: v for k, v in values.items() if v})
        return f"/console/audit?{kept}&" if kept else "/console/audit?"


class FilterRefused(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _day(value: str, label: str) -> date | None:
    if not value:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise FilterRefused(f"{label}: a date like 2026-11-24") from None


def _start_of(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=UTC)


async def _actor_id(db: AsyncSession, actor: str) -> str | None:
    """An e-mail or a user id; None for an e-mail no account has."""
    if is_row_id(actor):
        return actor
    return await db.scalar(select(User.id).where(User.email == actor.lower()))


@router.get("/console/audit")
async def audit_page(
    request: Request,
    _reviewer: SignedInAccount,
    db: DbSession,
    action: Text = "",
    resource_type: Annotated[str, Query(alias="resourceType", max_length=40)] = "",
    actor: Text = "",
    date_from: Annotated[str, Query(alias="from", max_length=20)] = "",
    date_to: Annotated[str, Query(alias="to", max_length=20)] = "",
    page_number: Annotated[int, Query(alias="page", ge=1, le=1_000_000)] = 1,
) -> Response:
    filters = Filters(action, resource_type, actor.strip(), date_from, date_to)
    context: dict[str, Any] = {
        "title": "Audit log",
        "nav": "audit",
        "filters": filters,
        "actions": ACTIONS,
        "resource_types": RESOURCE_TYPES,
        "links": AUDIT_LINKS,
        "rows": [],
        "total": 0,
        "page_number": page_number,
        "pages": 1,
        "error": None,
    }
    try:
        if action and action not in ACTIONS:
            raise FilterRefused("Action: choose one from the list")
        if resource_type and resource_type not in RESOURCE_TYPES:
            raise FilterRefused("Resource type: choose one from the list")
        first = _day(date_from, "From")
        last = _day(date_to, "To")
        if first and last and last < first:
            raise FilterRefused("To: must not be before From")
    except FilterRefused as refused:
        return page(request, "audit.html", status=400, **(context | {"error": refused.message}))
    actor_id = await _actor_id(db, filters.actor) if filters.actor else None
    if filters.actor and actor_id is None:
        # No such account: nothing it did, said plainly rather than ignoring the filter.
        context["error"] = f"No account has the e-mail {filters.actor}."
        return page(request, "audit.html", **context)
    query = audit_query(
        resource_type=resource_type or None,
        resource_id=None,
        action=action or None,
        actor_id=actor_id,
        since=_start_of(first) if first else None,
        before=_start_of(last + timedelta(days=1)) if last else None,
    )
    total = await count_of(db, query)
    context |= {
        "rows": await named_audit_page(db, query, Page(page_number, PAGE_SIZE)),
        "total": total,
        "pages": max(1, ceil(total / PAGE_SIZE)),
    }
    return page(request, "audit.html", **context)
