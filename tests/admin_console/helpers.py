"""Console test helpers: a logged-in browser-like client, forms, and rows made directly."""

from __future__ import annotations

import html
import re
from datetime import UTC, datetime
from typing import Any

import httpx
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from marketplace.models import ConsoleSession, PluginVersion, Scenario, ScenarioVersion
from tests.factories import PASSWORD, Account

_CSRF = re.compile(r'name="csrf_token" value="([^"]*)"')


def csrf_of(page: str) -> str:
    found = _CSRF.search(page)
    assert found, "no CSRF token on the page"
    return html.unescape(found.group(1))


def text_of(page: str) -> str:
    """The page's visible text, tags removed and entities decoded (for plain assertions)."""
    without_tags = re.sub(r"<[^>]+>", " ", page)
    return re.sub(r"\s+", " ", html.unescape(without_tags))


async def login(
    client: httpx.AsyncClient,
    email: str,
    password: str = PASSWORD,
    *,
    next_path: str | None = None,
) -> httpx.Response:
    """GET the login form (its CSRF cookie and field), then POST it; no redirects followed."""
    form_page = await client.get("/console/login")
    assert form_page.status_code == 200, form_page.text
    data = {"email": email, "password": password, "csrf_token": csrf_of(form_page.text)}
    if next_path is not None:
        data["next"] = next_path
    return await client.post("/console/login", data=data)


async def logged_in(client: httpx.AsyncClient, account: Account) -> httpx.Response:
    response = await login(client, account.email)
    assert response.status_code == 303, response.text
    return response


async def post_form(
    client: httpx.AsyncClient, path: str, data: dict[str, str], *, csrf: bool = True
) -> httpx.Response:
    """POST a console form as its page would: the page's own CSRF token comes along."""
    fields = dict(data)
    if csrf:
        page = await client.get(path)
        assert page.status_code == 200, page.text
        fields["csrf_token"] = csrf_of(page.text)
    return await client.post(path, data=fields)


async def session_rows(sessions: async_sessionmaker[AsyncSession]) -> list[ConsoleSession]:
    async with sessions() as db:
        return list(await db.scalars(select(ConsoleSession)))


async def age_sessions(sessions: async_sessionmaker[AsyncSession], **values: datetime) -> None:
    async with sessions() as db:
        await db.execute(update(ConsoleSession).values(**values))
        await db.commit()


async def set_findings(
    sessions: async_sessionmaker[AsyncSession], version_id: str, findings: list[dict[str, str]]
) -> None:
    async with sessions() as db:
        await db.execute(
            update(PluginVersion).where(PluginVersion.id == version_id).values(findings=findings)
        )
        await db.commit()


async def scenario_with_version(
    sessions: async_sessionmaker[AsyncSession],
    owner: Account,
    scenario_id: str,
    version: str = "1.0.0",
    *,
    review_status: str = "pending",
    **fields: Any,
) -> ScenarioVersion:
    """A scenario and one version of it (pending by default), straight into the database."""
    values: dict[str, Any] = {
        "name": f"Scenario {scenario_id}",
        "type": "programmatic",
        "category": "development",
        "permissions": ["filesystem:read"],
    } | fields
    now = datetime.now(UTC)
    async with sessions() as db:
        db.add(
            Scenario(
                id=scenario_id,
                owner_id=owner.id,
                version=version,
                review_status=review_status,
                created_at=now,
                updated_at=now,
                **values,
            )
        )
        row = ScenarioVersion(
            scenario_id=scenario_id, version=version, review_status=review_status, **values
        )
        db.add(row)
        await db.commit()
    return row
