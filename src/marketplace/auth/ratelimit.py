"""Rate limits with the `limits` library: in memory, or shared through Redis when configured.

Redis only makes the limits shared between processes; it is never needed to serve. When it
fails or is slow (bounded by a short socket timeout), each process counts in its own
memory for a while, logs it and counts it in `rate_limit_redis_fallbacks_total`, and tries
Redis again later; `/readyz` says which is in use.
"""

from __future__ import annotations

import math
import time

import redis.asyncio as redis
import structlog
from limits import RateLimitItem, parse
from limits.aio.storage import MemoryStorage, RedisStorage
from limits.aio.strategies import FixedWindowRateLimiter
from limits.errors import StorageError
from prometheus_client import Counter
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from marketplace.config import Settings
from marketplace.errors import RateLimitExceeded

# What a Redis outage looks like from here: refused, reset, timed out, or wrapped by limits.
_REDIS_FAILURES = (redis.RedisError, OSError, TimeoutError, StorageError)

log = structlog.get_logger("marketplace.ratelimit")


class RateLimiter:
    def __init__(self, settings: Settings, fallbacks: Counter | None = None) -> None:
        self.enabled = settings.rate_limit_enabled
        self._local = FixedWindowRateLimiter(MemoryStorage())
        self._shared: FixedWindowRateLimiter | None = None
        self._pool: redis.ConnectionPool | None = None
        self._retry_seconds = settings.redis_retry_seconds
        self._redis_down_until = 0.0
        self._fallbacks = fallbacks
        self.redis_error: str | None = None  # the last outage's error, while it lasts
        if settings.redis_url:
            # Shared across processes and hosts, so the limit holds when scaled out.
            # Our own pool, so shutdown can close its connections.
            timeout = settings.redis_timeout_seconds
            # No retries inside redis-py: they would multiply the timeout per request.
            self._pool = redis.ConnectionPool.from_url(
                settings.redis_url,
                socket_connect_timeout=timeout,
                socket_timeout=timeout,
                retry=Retry(NoBackoff(), 0),
            )
            storage = RedisStorage(
                _redis_uri(settings.redis_url),
                implementation="redispy",
                key_prefix="mkt",
                connection_pool=self._pool,  # type: ignore[arg-type]
            )
            self._shared = FixedWindowRateLimiter(storage)
        self.login: RateLimitItem = parse(settings.rate_limit_login)
        self.write: RateLimitItem = parse(settings.rate_limit_write)
        self.read: RateLimitItem = parse(settings.rate_limit_read)

    @property
    def uses_redis(self) -> bool:
        return self._shared is not None

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.aclose()

    async def hit(self, item: RateLimitItem, *identifiers: str) -> None:
        """Count one request; raise 429 with Retry-After when the window is spent."""
        if not self.enabled:
            return
        try:
            reset_at = await _spent_until(self._current(), item, identifiers)
        except _REDIS_FAILURES as exc:
            self._redis_failed(exc)
            reset_at = await _spent_until(self._local, item, identifiers)
        if reset_at is None:
            return
        retry_after = max(1, math.ceil(reset_at - time.time()))
        raise RateLimitExceeded(
            details={"retryAfter": retry_after}, headers={"Retry-After": str(retry_after)}
        )

    async def check_redis(self) -> str | None:
        """For /readyz: "ok", or what is wrong with Redis; None when none is configured."""
        if self._pool is None:
            return None
        try:
            client = redis.Redis(connection_pool=self._pool)
            await client.ping()
        except _REDIS_FAILURES as exc:
            return f"error: {type(exc).__name__} (rate limits are counted per process)"
        return "ok"

    def _current(self) -> FixedWindowRateLimiter:
        if self._shared is None or time.monotonic() < self._redis_down_until:
            return self._local
        if self.redis_error is not None:
            log.info("rate limits shared through Redis again")
            self.redis_error = None
        return self._shared

    def _redis_failed(self, exc: BaseException) -> None:
        self._redis_down_until = time.monotonic() + self._retry_seconds
        self.redis_error = type(exc).__name__
        if self._fallbacks is not None:
            self._fallbacks.inc()
        log.warning(
            "Redis unreachable: rate limits counted in this process",
            error=type(exc).__name__,
            retry_in_seconds=self._retry_seconds,
        )


async def _spent_until(
    limiter: FixedWindowRateLimiter, item: RateLimitItem, identifiers: tuple[str, ...]
) -> float | None:
    """Count a hit; None when allowed, else when the spent window resets (epoch seconds)."""
    if await limiter.hit(item, *identifiers):
        return None
    stats = await limiter.get_window_stats(item, *identifiers)
    return float(stats.reset_time)


def _redis_uri(url: str) -> str:
    # limits wants its own scheme prefix for the async storage.
    if url.startswith("async+"):
        return url
    return "async+" + url
