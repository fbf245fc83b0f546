"""One rule for e-mail addresses (issue 24 item 3): the OpenAPI pattern is the rule, the
service accepts every address the pattern allows and refuses every one it does not."""

from __future__ import annotations

import re

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from marketplace.accounts.schemas import RegisterIn
from marketplace.models import User
from marketplace_rules.emails import EMAIL_MAX_LENGTH, EMAIL_PATTERN, email_problem
from tests.helpers import err, ok

PATTERN = re.compile(EMAIL_PATTERN)
PASSWORD = "a-good-password-1"


def _service_accepts(address: str) -> bool:
    try:
        RegisterIn.model_validate({"email": address, "password": PASSWORD, "name": "N"})
    except ValueError:
        return False
    return True


def _documented(address: str) -> bool:
    """As a JSON Schema validator reads it: ECMA's `$` is the end (Python's also matches
    before a final newline)."""
    return len(address) <= EMAIL_MAX_LENGTH and PATTERN.fullmatch(address) is not None


@pytest.mark.parametrize(
    "address",
    [
        "*34@ooq6dxdh.kw7.test*",  # the fault run's: a `*` in a domain name
        "dev@localhost",
        "dev@example",
        "dev@example.123",
        "dev@-example.com",
        "dev@example-.com",
        "dev@exa_mple.com",
        ".dev@example.com",
        "dev.@example.com",
        "de..v@example.com",
        "dev@@example.com",
        "dev @example.com",
        "dev@example.com\n",
        " dev@example.com",
        "dév@example.com",
        "dev@例子.com",
        "dev@[127.0.0.1]",
        "a" * 250 + "@b.co",
    ],
)
async def test_registration_refuses_what_the_documented_pattern_refuses(
    client: httpx.AsyncClient,
    sessionmaker: async_sessionmaker[AsyncSession],
    address: str,
) -> None:
    response = await client.post(
        "/api/v1/auth/register", json={"email": address, "password": PASSWORD, "name": "N"}
    )

    error = err(response, 400, "VALIDATION_FAILED")
    assert [f["field"] for f in error["details"]["fields"]] == ["email"]
    assert not _documented(address)
    async with sessionmaker() as session:
        assert await session.scalar(select(func.count()).select_from(User)) == 0


@pytest.mark.parametrize(
    "address",
    [
        "dev@example.com",
        "Dev.Ops+tag@sub.example.co.uk",
        "o'brien@example.ie",
        "x@xn--fiqs8s.xn--p1ai",
        "a!#$%&'*+/=?^_`{|}~-@b-1.example",
    ],
)
async def test_registration_accepts_what_the_documented_pattern_allows(
    client: httpx.AsyncClient, address: str
) -> None:
    assert _documented(address)
    response = await client.post(
        "/api/v1/auth/register", json={"email": address, "password": PASSWORD, "name": "N"}
    )
    user = ok(response, 201)["user"]
    assert user["email"] == address.lower()


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.from_regex(EMAIL_PATTERN, fullmatch=True).filter(lambda a: len(a) <= EMAIL_MAX_LENGTH))
def test_every_address_the_pattern_generates_is_accepted(address: str) -> None:
    assert email_problem(address) is None
    assert _service_accepts(address)


@settings(max_examples=300)
@given(st.text(alphabet=st.sampled_from("ab.@-_*1 é"), max_size=20))
def test_the_service_and_the_pattern_agree_on_any_text(address: str) -> None:
    assert _service_accepts(address) == _documented(address)
