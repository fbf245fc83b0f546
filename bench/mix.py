"""The realistic mix of bench_browse.py: many distinct public URLs, measured cold.

* `make_mix` draws an ordered list of requests: most URLs are new (browse with every sort,
  English, Chinese and 1-2 character `q`, category, type, isFree, pages 1-30; detail by id
  and by key; versions; reviews; categories; featured; popular; download info), and a share
  of the requests repeats a small set of popular URLs (Zipf ranks). 30 % carry the user's
  token (download info always does). The whole list is one first pass: nothing is warmed.
* `run_load` plays a list over 32 keep-alive connections with a small asyncio HTTP/1.1
  client (one core; the service answers about 10x fewer requests a second than it can send)
  and keeps every request's latency by kind, so the report names what costs what.
* `uncached` times one request at a time after moving the catalogue generation (every
  cached response and total is then stale): the server's full work per kind of read.
"""

from __future__ import annotations

import asyncio
import json
import random
import statistics
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlencode

# Words of bench_browse's catalogue: "weather" is in about 12 % of the plugins' text.
EN_QUERIES = [
    "data", "file", "image", "translate", "calendar", "mail", "search", "code", "sheet",
    "weather", "music", "note", "chat", "monitor", "deploy", "test", "assistant", "sync",
    "data sync", "mail assistant", "weather tool", "plugin number 4", "converter",
]  # fmt: skip
ZH_QUERIES = [
    "数据", "文件", "图像", "翻译", "日历", "邮件", "搜索", "代码", "表格", "天气", "音乐",
    "笔记", "数据分析", "天气助手", "同步", "管理器", "生成器", "基准测试", "插件",
]  # fmt: skip
SHORT_QUERIES = ["a", "ai", "x", "数", "go", "db", "c+"]
SORTS = ["popular", "newest", "rating", "name", "updated"]
CATEGORIES = [
    "productivity", "development", "automation", "database", "design",
    "frontend", "office", "ai", "utility", "channel",
]  # fmt: skip
TYPES = ["tool", "mcp", "skill", "hook", "channel", "scenario", "composite"]
COMMON_WORD = "weather"

# Kinds of URL and their share of new URLs in the mix.
KIND_WEIGHTS = {
    "browse_sort": 8,  # a sort and a page, nothing else
    "browse_filter": 14,  # category / type / isFree with a sort and a page
    "browse_q_en": 12,
    "browse_q_zh": 8,
    "browse_q_short": 3,
    "detail_id": 14,
    "detail_key": 8,
    "versions": 10,
    "reviews": 6,
    "categories": 2,
    "featured": 2,
    "popular": 3,
    "download": 10,
}
LOGGED_IN = 0.3
REPEAT_SHARE = 0.25  # requests that repeat one of the popular URLs
POPULAR_URLS = 300


@dataclass(frozen=True)
class Request:
    kind: str
    path: str
    auth: bool


def _browse(rng: random.Random, kind: str) -> str:
    params: dict[str, str] = {}
    if kind == "browse_q_en":
        params["q"] = rng.choice(EN_QUERIES)
    elif kind == "browse_q_zh":
        params["q"] = rng.choice(ZH_QUERIES)
    elif kind == "browse_q_short":
        params["q"] = rng.choice(SHORT_QUERIES)
    elif kind == "browse_filter":
        while not params:
            if rng.random() < 0.6:
                params["category"] = rng.choice(CATEGORIES)
            if rng.random() < 0.4:
                params["type"] = rng.choice(TYPES)
            if rng.random() < 0.3:
                params["isFree"] = rng.choice(["true", "false"])
    if rng.random() < 0.8:  # else the default sort (popular)
        params["sort"] = rng.choice(SORTS)
    page = rng.choice([1, 1, 1, 2, 2, 3]) if rng.random() < 0.6 else rng.randint(1, 30)
    if page > 1:
        params["page"] = str(page)
    return "/api/v1/plugins/browse?" + urlencode(params)


def new_url(rng: random.Random, kind: str, ids: Sequence[str], keys: Sequence[str],
            downloadable: Sequence[str]) -> str:  # fmt: skip
    base = "/api/v1/plugins"
    if kind.startswith("browse"):
        return _browse(rng, kind)
    index = rng.randrange(len(ids))
    if kind == "detail_id":
        return f"{base}/detail/{ids[index]}"
    if kind == "detail_key":
        return f"{base}/detail/{keys[index]}"
    if kind == "versions":
        return f"{base}/versions/{ids[index]}"
    if kind == "reviews":
        return f"{base}/reviews/{ids[index]}" + ("?page=2" if rng.random() < 0.2 else "")
    if kind == "categories":
        return f"{base}/categories"
    if kind in ("featured", "popular"):
        return f"{base}/{kind}?limit={rng.choice([5, 10, 10, 10, 20, 50])}"
    if kind == "download":
        return f"/api/v1/plugins/download/{rng.choice(downloadable)}/latest"
    raise ValueError(kind)


def make_mix(
    count: int,
    ids: Sequence[str],
    keys: Sequence[str],
    downloadable: Sequence[str],
    seed: int,
    logged_in: float = LOGGED_IN,
) -> list[Request]:
    """`count` requests; about (1 - REPEAT_SHARE) of them on URLs seen for the first time."""
    rng = random.Random(seed)
    kinds = list(KIND_WEIGHTS)
    weights = list(KIND_WEIGHTS.values())
    popular: list[tuple[str, str]] = []
    requests: list[Request] = []
    for _ in range(count):
        if popular and rng.random() < REPEAT_SHARE:
            # Zipf over the popular URLs: rank r is asked about 1/r as often as rank 1.
            rank = min(len(popular), int(rng.paretovariate(1.0)))
            kind, path = popular[rank - 1]
        else:
            kind = rng.choices(kinds, weights)[0]
            path = new_url(rng, kind, ids, keys, downloadable)
            if len(popular) < POPULAR_URLS and kind != "download":
                popular.append((kind, path))
        auth = kind == "download" or rng.random() < logged_in
        requests.append(Request(kind, path, auth))
    return requests


# ---------------------------------------------------------------------------------------
# A small HTTP/1.1 client


class _Connection:
    def __init__(self, host: str, port: int, token: str) -> None:
        self.host, self.port, self.token = host, port, token
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def get(self, path: str, auth: bool) -> tuple[int, bytes]:
        return await self.send("GET", path, auth)

    async def send(
        self, method: str, path: str, auth: bool, body: bytes | None = None
    ) -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        assert self.reader is not None
        head = f"{method} {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
        if auth:
            head += f"Authorization: Bearer {self.token}\r\n"
        if body is not None:
            head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        self.writer.write((head + "\r\n").encode() + (body or b""))
        status = int((await self.reader.readline()).split()[1])
        length, chunked, close = 0, False, False
        while True:
            line = (await self.reader.readline()).strip().lower()
            if not line:
                break
            name, _, value = line.partition(b":")
            if name == b"content-length":
                length = int(value)
            elif name == b"transfer-encoding" and b"chunked" in value:
                chunked = True
            elif name == b"connection" and b"close" in value:
                close = True
        if chunked:
            body = b""
            while size := int((await self.reader.readline()).strip(), 16):
                body += await self.reader.readexactly(size + 2)
            await self.reader.readline()
        else:
            body = await self.reader.readexactly(length)
        if close:
            self.close()
        return status, body

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


@dataclass
class KindStats:
    latencies_ms: list[float] = field(default_factory=list)
    errors: int = 0


@dataclass
class LoadResult:
    requests: int
    seconds: float
    requests_per_second: float
    p50_ms: float
    p99_ms: float
    errors: int
    kinds: dict[str, KindStats]
    distinct_urls: int


def percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def run_load(
    host: str, port: int, token: str, requests: Sequence[Request], seconds: float,
    connections: int,
) -> LoadResult:  # fmt: skip
    """Play `requests` in order over `connections` connections until done or `seconds`."""
    kinds: dict[str, KindStats] = {}
    latencies: list[float] = []
    position = 0
    start = time.perf_counter()
    deadline = start + seconds

    async def worker() -> None:
        nonlocal position
        conn = _Connection(host, port, token)
        try:
            while position < len(requests) and time.perf_counter() < deadline:
                request = requests[position]
                position += 1
                stats = kinds.setdefault(request.kind, KindStats())
                began = time.perf_counter()
                try:
                    status, _ = await asyncio.wait_for(conn.get(request.path, request.auth), 60)
                except (OSError, asyncio.IncompleteReadError, TimeoutError, ValueError):
                    conn.close()
                    status = 0
                took = (time.perf_counter() - began) * 1000
                if status != 200:
                    stats.errors += 1
                stats.latencies_ms.append(took)
                latencies.append(took)
        finally:
            conn.close()

    await asyncio.gather(*(worker() for _ in range(connections)))
    elapsed = time.perf_counter() - start
    done = requests[:position]
    return LoadResult(
        requests=len(latencies),
        seconds=elapsed,
        requests_per_second=len(latencies) / elapsed if elapsed else 0.0,
        p50_ms=percentile(latencies, 0.5),
        p99_ms=percentile(latencies, 0.99),
        errors=sum(s.errors for s in kinds.values()),
        kinds=kinds,
        distinct_urls=len({(r.path, r.auth) for r in done}),
    )


@dataclass
class Uncached:
    kind: str
    median_ms: float
    max_ms: float
    samples: int
    errors: int


async def uncached(
    host: str, port: int, token: str, samples: dict[str, list[Request]],
    bump: Callable[[], Awaitable[None]],
) -> list[Uncached]:  # fmt: skip
    """One request at a time, each right after a generation bump (nothing cached applies)."""
    conn = _Connection(host, port, token)
    out: list[Uncached] = []
    try:
        for kind, requests in samples.items():
            times: list[float] = []
            errors = 0
            for request in requests:
                await bump()
                began = time.perf_counter()
                status, _ = await conn.get(request.path, request.auth)
                times.append((time.perf_counter() - began) * 1000)
                errors += status != 200
            out.append(Uncached(kind, statistics.median(times), max(times), len(times), errors))
    finally:
        conn.close()
    return out


@dataclass
class UpdateChecks:
    """Update checks of `installed` plugins each, one at a time, against the bare page's
    round trip measured the same way (what the client and the HTTP stack cost)."""

    installed: int
    cold_ms: float  # median, the generation moved before each check (nothing cached)
    warm_ms: float  # median, the plugins' answers cached
    bare_ms: float  # median round trip of the bare page
    errors: int

    @property
    def cold_server_ms(self) -> float:
        return max(0.0, self.cold_ms - self.bare_ms)

    @property
    def warm_server_ms(self) -> float:
        return max(0.0, self.warm_ms - self.bare_ms)


async def update_checks(
    host: str, port: int, bare_port: int, keys: Sequence[str], installed: int, samples: int,
    bump: Callable[[], Awaitable[None]], seed: int = 7,
) -> UpdateChecks:  # fmt: skip
    """A desktop client's check: `installed` plugins drawn at random, most on the current
    version and some behind it, each check from a different install."""
    rng = random.Random(seed)
    bodies = []
    for n in range(samples):
        chosen = rng.sample(list(keys), installed)
        items = [
            {"pluginKey": key, "version": "0.9.0" if rng.random() < 0.2 else "1.0.0"}
            for key in chosen
        ]
        bodies.append(json.dumps({"installId": f"bench-install-{n:06d}", "items": items}).encode())
    conn, bare = _Connection(host, port, ""), _Connection(host, bare_port, "")
    cold: list[float] = []
    warm: list[float] = []
    bare_times: list[float] = []
    errors = 0
    try:
        for body in bodies:
            await bump()
            began = time.perf_counter()
            status, _ = await conn.send("POST", "/api/v1/plugins/updates", False, body)
            cold.append((time.perf_counter() - began) * 1000)
            began = time.perf_counter()
            status_warm, _ = await conn.send("POST", "/api/v1/plugins/updates", False, body)
            warm.append((time.perf_counter() - began) * 1000)
            errors += (status != 200) + (status_warm != 200)
            began = time.perf_counter()
            await bare.get("/page", False)
            bare_times.append((time.perf_counter() - began) * 1000)
    finally:
        conn.close()
        bare.close()
    return UpdateChecks(
        installed,
        statistics.median(cold),
        statistics.median(warm),
        statistics.median(bare_times),
        errors,
    )


def search_probes(samples_each: int) -> dict[str, list[Request]]:
    """The common word (about 12 % of the catalogue) by every sort, page 1 and 30, and the
    Chinese and 1-character queries CONTRACT 6 keeps."""
    probes: dict[str, list[Request]] = {}
    for sort in SORTS:
        for page in (1, 30):
            path = "/api/v1/plugins/browse?" + urlencode(
                {"q": COMMON_WORD, "sort": sort, "page": page}
            )
            probes[f"q={COMMON_WORD} {sort} p{page}"] = [Request("probe", path, False)] * (
                samples_each
            )
    for q in ("天气", "数据分析", "a"):
        path = "/api/v1/plugins/browse?" + urlencode({"q": q})
        probes[f"q={q} popular p1"] = [Request("probe", path, False)] * samples_each
    return probes


def kind_samples(requests: Sequence[Request], per_kind: int) -> dict[str, list[Request]]:
    """Up to `per_kind` distinct anonymous URLs of each kind (download info keeps its token)."""
    out: dict[str, list[Request]] = {}
    seen: set[str] = set()
    for request in requests:
        chosen = out.setdefault(request.kind, [])
        if len(chosen) < per_kind and request.path not in seen:
            seen.add(request.path)
            chosen.append(Request(request.kind, request.path, request.kind == "download"))
    return {kind: out[kind] for kind in KIND_WEIGHTS if kind in out}


def breakdown(result: LoadResult) -> list[str]:
    lines = [
        "| kind | requests | share | p50 ms | p99 ms | mean ms | errors |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    total = max(1, result.requests)
    ordered = sorted(result.kinds.items(), key=lambda kv: -sum(kv[1].latencies_ms))
    for kind, stats in ordered:
        values = stats.latencies_ms
        lines.append(
            f"| {kind} | {len(values):,} | {100 * len(values) / total:.0f}% | "
            f"{percentile(values, 0.5):.1f} | {percentile(values, 0.99):.1f} | "
            f"{statistics.fmean(values) if values else 0:.1f} | {stats.errors} |"
        )
    return lines
