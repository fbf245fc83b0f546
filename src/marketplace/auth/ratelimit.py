"""Rate limits with the `limits` library: in memory, or shared through Redis when configured."""

from __future__ import annotations

import math
import time

import redis.asyncio as redis
from limits import RateLimitItem, parse
from limits.aio.storage import MemoryStorage, RedisStorage, Storage
from limits.aio.strategies import FixedWindowRateLimiter

from marketplace.config import Settings
from marketplace.errors import RateLimitExceeded


class RateLimiter:
    def __init__(self, settings: Settings) -> None:
        self.enabled = settings.rate_limit_enabled
        self.storage: Storage
        self._pool: redis.ConnectionPool | None = None
        if settings.redis_url:
            # Shared across processes and hosts, so the limit holds when scaled out.
            # Our own pool, so shutdown can close its connections.
            self._pool = redis.ConnectionPool.from_url(settings.redis_url)
            self.storage = RedisStorage(
                _redis_uri(settings.redis_url),
                implementation="redispy",
                key_prefix="mkt",
                connection_pool=self._pool,  # type: ignore[arg-type]
            )
        else:
            self.storage = MemoryStorage()
        self._limiter = FixedWindowRateLimiter(self.storage)
        self.login: RateLimitItem = parse(settings.rate_limit_login)
        self.write: RateLimitItem = parse(settings.rate_limit_write)
        self.read: RateLimitItem = parse(settings.rate_limit_read)

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.aclose()

    async def hit(self, item: RateLimitItem, *identifiers: str) -> None:
        """Count one request; raise 429 with Retry-After when the window is spent."""
        if not self.enabled:
            return
        if await self._limiter.hit(item, *identifiers):
            return
        stats = await self._limiter.get_window_stats(item, *identifiers)
        retry_after = max(1, math.ceil(stats.reset_time - time.time()))
        raise RateLimitExceeded(
            details={"retryAfter": retry_after}, headers={"Retry-After": str(retry_after)}
        )


def _redis_uri(url: str) -> str:
    # limits wants its own scheme prefix for the async storage.
    if url.startswith("async+"):
        return url
    return "async+" + url
