"""Helpers for publishing-token tests: issue one through the API, use it as an Account."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from marketplace.models import PublishingToken
from tests.factories import Account
from tests.helpers import ok

TOKENS = "/api/v1/auth/tokens"


@dataclass
class Pat:
    """A publishing token as a caller: `headers` like an Account's."""

    id: str
    token: str
    owner: Account
    data: dict[str, Any]

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


async def issue(
    client: httpx.AsyncClient,
    owner: Account,
    *,
    scopes: list[str] | None = None,
    plugins: list[str] | None = None,
    days: int = 30,
    name: str = "ci",
) -> Pat:
    body: dict[str, Any] = {
        "name": name,
        "scopes": scopes if scopes is not None else ["publish", "read"],
        "expiresInDays": days,
    }
    if plugins is not None:
        body["plugins"] = plugins
    data: dict[str, Any] = ok(await client.post(TOKENS, json=body, headers=owner.headers), 201)
    return Pat(data["id"], data["token"], owner, data)


async def listed(client: httpx.AsyncClient, owner: Account) -> dict[str, dict[str, Any]]:
    """The owner's tokens by id, as the list shows them."""
    data = ok(await client.get(TOKENS, headers=owner.headers))
    return {item["id"]: item for item in data["items"]}


async def expire(sessions: async_sessionmaker[AsyncSession], token_id: str) -> None:
    """Move a token's expiry into the past (its creation too, for the check constraint)."""
    past = datetime.now(UTC) - timedelta(days=1)
    async with sessions.begin() as session:
        await session.execute(
            update(PublishingToken)
            .where(PublishingToken.id == token_id)
            .values(created_at=past - timedelta(days=1), expires_at=past)
        )
