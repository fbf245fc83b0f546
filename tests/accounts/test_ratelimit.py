from __future__ import annotations

import os
import socket
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from marketplace.app import create_app, shutdown
from marketplace.config import Settings
from tests.helpers import err, silent_server

REDIS_URL = os.environ.get("MARKETPLACE_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


def _limited(settings: Settings, **overrides: object) -> Settings:
    return settings.model_copy(update={"rate_limit_enabled": True, **overrides})


async def _login(http: httpx.AsyncClient, email: str) -> httpx.Response:
    return await http.post("/api/v1/auth/login", json={"email": email, "password": "whatever1"})


async def _client(app: FastAPI) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")


async def test_login_limit_answers_429_with_retry_after(settings: Settings) -> None:
    app = create_app(_limited(settings, rate_limit_login="3/minute"))
    async with await _client(app) as http:
        for _ in range(3):
            err(await _login(http, "a@example.com"), 401, "UNAUTHORIZED")
        response = await _login(http, "a@example.com")
        err(response, 429, "RATE_LIMIT_EXCEEDED")
        assert 1 <= int(response.headers["retry-after"]) <= 60
    await shutdown(app)


async def test_login_limit_is_per_email_as_well_as_ip(settings: Settings) -> None:
    app = create_app(_limited(settings, rate_limit_login="2/minute"))
    async with await _client(app) as http:
        for _ in range(2):
            await _login(http, "b@example.com")
        # Same IP, so the per-IP window is spent too: both keys count.
        err(await _login(http, "c@example.com"), 429, "RATE_LIMIT_EXCEEDED")
    await shutdown(app)


async def test_read_limit_per_ip(settings: Settings) -> None:
    app = create_app(_limited(settings, rate_limit_read="5/minute"))
    async with await _client(app) as http:
        for _ in range(5):
            assert (await http.get("/api/v1/auth/me")).status_code == 401
        err(await http.get("/api/v1/auth/me"), 429, "RATE_LIMIT_EXCEEDED")
        assert (await http.get("/healthz")).status_code == 200
    await shutdown(app)


@pytest.fixture
async def redis_available() -> AsyncIterator[None]:
    import redis.asyncio as redis

    client = redis.from_url(REDIS_URL)
    try:
        await client.ping()
    except Exception as exc:
        await client.aclose()
        if os.environ.get("CI") == "true":
            pytest.fail(f"Redis unreachable at {REDIS_URL}: {exc}")
        pytest.skip(
            f"Redis unreachable at {REDIS_URL} ({exc}); start redis-server to run this test"
        )
    await client.aclose()
    return


@pytest.mark.redis
@pytest.mark.usefixtures("redis_available")
async def test_two_app_instances_share_one_limit_through_redis(
    settings: Settings, tmp_path: Path
) -> None:
    # A prefix of its own: other test runs may share this Redis within the same minute.
    limited = _limited(
        settings,
        redis_url=REDIS_URL,
        redis_key_prefix=f"test-{uuid.uuid4().hex}",
        rate_limit_login="4/minute",
    )
    first, second = create_app(limited), create_app(limited)
    email = f"{uuid.uuid4().hex}@example.com"
    # Distinct client IPs per instance so only the shared per-email window can trip.
    t1 = httpx.ASGITransport(app=first, client=(f"10.1.{uuid.uuid4().int % 250}.1", 1000))
    t2 = httpx.ASGITransport(app=second, client=(f"10.2.{uuid.uuid4().int % 250}.2", 1000))
    async with (
        httpx.AsyncClient(transport=t1, base_url="http://test") as a,
        httpx.AsyncClient(transport=t2, base_url="http://test") as b,
    ):
        for http in (a, b, a, b):
            err(await _login(http, email), 401, "UNAUTHORIZED")
        err(await _login(a, email), 429, "RATE_LIMIT_EXCEEDED")
        err(await _login(b, email), 429, "RATE_LIMIT_EXCEEDED")
    for app in (first, second):
        await shutdown(app)


@pytest.mark.redis
@pytest.mark.usefixtures("redis_available")
async def test_memory_storage_does_not_share_between_instances(settings: Settings) -> None:
    limited = _limited(settings, rate_limit_login="2/minute")
    first, second = create_app(limited), create_app(limited)
    async with await _client(first) as a, await _client(second) as b:
        for http in (a, a):
            await _login(http, "d@example.com")
        err(await _login(a, "d@example.com"), 429, "RATE_LIMIT_EXCEEDED")
        err(await _login(b, "d@example.com"), 401, "UNAUTHORIZED")
    for app in (first, second):
        await shutdown(app)


# --- Redis outages: limits keep working in the process, requests keep being served ---------


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port  # nothing listens once the socket is closed


@pytest.fixture
def silent_redis() -> Iterator[str]:
    """A hung Redis."""
    with silent_server() as port:
        yield f"redis://127.0.0.1:{port}/0"


def _fallbacks(app: FastAPI) -> float:
    value = app.state.metrics.registry.get_sample_value("rate_limit_redis_fallbacks_total")
    return float(value or 0)


@pytest.mark.fault
async def test_redis_down_serves_requests_and_limits_in_the_process(settings: Settings) -> None:
    app = create_app(
        _limited(
            settings,
            redis_url=f"redis://127.0.0.1:{_closed_port()}/0",
            rate_limit_login="2/minute",
        )
    )
    async with await _client(app) as http:
        assert (await http.get("/api/v1/plugins/browse")).status_code == 200
        for _ in range(2):
            err(await _login(http, "down@example.com"), 401, "UNAUTHORIZED")
        err(await _login(http, "down@example.com"), 429, "RATE_LIMIT_EXCEEDED")
        ready = await http.get("/readyz")
        assert ready.status_code == 200
        assert ready.json()["status"] == "degraded"
        assert ready.json()["checks"]["redis"].startswith("error: ")
    # One failure, then Redis is left alone for redis_retry_seconds.
    assert _fallbacks(app) == 1
    await shutdown(app)


@pytest.mark.fault
async def test_a_hung_redis_costs_one_short_timeout_not_one_per_request(
    settings: Settings, silent_redis: str
) -> None:
    app = create_app(_limited(settings, redis_url=silent_redis, redis_timeout_seconds=0.2))
    async with await _client(app) as http:
        for _ in range(5):
            assert (await http.get("/api/v1/plugins/browse")).status_code == 200
    assert _fallbacks(app) == 1
    assert app.state.limiter.redis_error is not None
    await shutdown(app)


@pytest.mark.redis
@pytest.mark.usefixtures("redis_available")
async def test_readyz_says_ok_with_a_reachable_redis(settings: Settings) -> None:
    app = create_app(_limited(settings, redis_url=REDIS_URL))
    async with await _client(app) as http:
        ready = await http.get("/readyz")
    assert ready.status_code == 200
    assert ready.json()["status"] == "ok"
    assert ready.json()["checks"]["redis"] == "ok"
    assert _fallbacks(app) == 0
    await shutdown(app)
