"""Serving public reads: one generation check, then cached bytes, ETag and Cache-Control.

Anonymous responses are shared: `public, no-cache` lets a CDN or browser keep them and
revalidate with If-None-Match (a 304 costs one generation check and no body). `no-cache`
rather than a max-age, because a takedown must be visible at once (never a taken-down
plugin shown as listed). A response carrying the caller's purchase state is `private`.

Purchase states come from commerce, which builds on the catalog: app.py hands its lookup
in (install_purchase_states), so the catalog never imports commerce.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable, Coroutine, Hashable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

import orjson
from fastapi import FastAPI, Request
from pydantic import BaseModel
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from starlette.responses import Response

from marketplace.auth.pat import is_publishing_token
from marketplace.auth.tokens import decode_access_token
from marketplace.catalog.cache import CachedBody, Generation, catalog_cache
from marketplace.catalog.schemas import PurchaseStateOut
from marketplace.kit.routing import ApiRoute
from marketplace.models import User

PUBLIC = "public, no-cache"
PRIVATE = "private, no-cache"
# Whether a token came with the request changes the answer (purchase state, or a 401).
VARY = "Authorization"

NOT_MODIFIED: dict[int | str, dict[str, Any]] = {
    304: {"description": "Not Modified: the If-None-Match header matched the ETag"}
}


class PurchaseState(Protocol):
    """The caller's purchase of one plugin (commerce.purchases.PurchaseState)."""

    @property
    def purchased(self) -> bool: ...
    @property
    def active(self) -> bool: ...
    @property
    def expires_at(self) -> datetime | None: ...


# (session, user id, plugin ids) -> states of the plugins ever bought, in one query.
PurchaseStates = Callable[
    [AsyncSession, str, Iterable[str]], Awaitable[Mapping[str, PurchaseState]]
]
# The same, and None when the account does not exist (still one query).
CallerPurchaseStates = Callable[
    [AsyncSession, str, Iterable[str]], Awaitable[Mapping[str, PurchaseState] | None]
]


def install_purchase_states(
    app: FastAPI, lookup: PurchaseStates, caller_lookup: CallerPurchaseStates
) -> None:
    """Where logged-in reads take the caller's purchase states from."""
    app.state.purchase_states = lookup
    app.state.caller_purchase_states = caller_lookup


def _purchase_states(app: FastAPI) -> PurchaseStates:
    lookup: PurchaseStates = app.state.purchase_states
    return lookup


def _caller_purchase_states(app: FastAPI) -> CallerPurchaseStates:
    lookup: CallerPurchaseStates = app.state.caller_purchase_states
    return lookup


@dataclass(frozen=True)
class Built:
    """What a cache miss computes: the validated response model and its plugins' places."""

    model: BaseModel
    shape: str = "none"  # "items": data.items are plugins; "plugin": data is one; "none"


def etag_of(body: bytes) -> str:
    return '"' + hashlib.blake2b(body, digest_size=16).hexdigest() + '"'


def _encode(data: Any) -> bytes:
    return orjson.dumps({"success": True, "data": data})


def _entry(built: Built) -> CachedBody:
    data = built.model.model_dump(mode="json", by_alias=True)
    if built.shape == "items":
        ids = tuple(item["id"] for item in data["items"])
    elif built.shape == "plugin":
        ids = (data["id"],)
    else:
        ids = ()
    body = _encode(data)
    return CachedBody(body=body, etag=etag_of(body), plugin_ids=ids, shape=built.shape)


NEVER_BOUGHT: dict[str, Any] = PurchaseStateOut(
    purchased=False, active=False, expires_at=None
).model_dump(mode="json", by_alias=True)


def _state_json(state: PurchaseState | None) -> dict[str, Any]:
    if state is None:
        return NEVER_BOUGHT
    out = PurchaseStateOut(
        purchased=state.purchased, active=state.active, expires_at=state.expires_at
    )
    return out.model_dump(mode="json", by_alias=True)


def _with_purchases(entry: CachedBody, states: Mapping[str, PurchaseState]) -> Any:
    def plugin(item: dict[str, Any]) -> dict[str, Any]:
        return {**item, "purchase": _state_json(states.get(item["id"]))}

    data = orjson.loads(entry.body)["data"]  # the entry keeps bytes only (see CachedBody)
    if entry.shape == "items":
        return {**data, "items": [plugin(item) for item in data["items"]]}
    return plugin(data)


def _personal_body(entry: CachedBody, states: Mapping[str, PurchaseState]) -> tuple[bytes, str]:
    """The entry with the caller's purchase states. Most callers bought none of its plugins:
    their copy is one and the same, encoded once per entry."""
    if not states:
        unbought = entry.derived.get("unbought")
        if unbought is None:
            body = _encode(_with_purchases(entry, states))
            unbought = entry.derived["unbought"] = (body, etag_of(body))
        return unbought
    body = _encode(_with_purchases(entry, states))
    return body, etag_of(body)


def etag_matches(request: Request, etag: str) -> bool:
    """If-None-Match names this ETag (or is `*`)."""
    header = request.headers.get("if-none-match")
    if not header:
        return False
    if header.strip() == "*":
        return True
    # Weak comparison (RFC 9110 13.1.2): W/ prefixes do not matter for If-None-Match.
    return any(tag.strip().removeprefix("W/") == etag for tag in header.split(","))


def _respond(request: Request, body: bytes, etag: str, cache_control: str) -> Response:
    headers = {"ETag": etag, "Cache-Control": cache_control, "Vary": VARY}
    if etag_matches(request, etag):
        return Response(status_code=304, headers=headers)
    return Response(content=body, media_type="application/json", headers=headers)


def conditional_response(request: Request, body: bytes, etag: str, cache_control: str) -> Response:
    """The body with its ETag and Cache-Control, or 304 when If-None-Match names the ETag."""
    return _respond(request, body, etag, cache_control)


def request_key(request: Request) -> Hashable:
    """The cache key of a public read: its path and its query, order-insensitive."""
    return (request.url.path, tuple(sorted(request.query_params.multi_items())))


async def serve_public(
    request: Request,
    session: AsyncSession,
    user: User | None,
    build: Callable[[Generation], Awaitable[Built]],
) -> Response:
    """The cached response for this request at the current generation, built on a miss."""
    cache = catalog_cache(request.app)
    key = request_key(request)
    generation = await cache.generation(session)
    entry = cache.response(generation, key)
    if entry is None:
        entry = _entry(await build(generation))
        cache.store_response(generation, key, entry)
    if user is None or entry.shape == "none":
        return _respond(request, entry.body, entry.etag, PUBLIC)
    # One query for the whole page, whatever its size.
    states = await _purchase_states(request.app)(session, user.id, entry.plugin_ids)
    return _personal_response(request, entry, states)


def _personal_response(
    request: Request, entry: CachedBody, states: Mapping[str, PurchaseState]
) -> Response:
    if entry.shape == "none":  # nothing personal in it: the shared copy
        return _respond(request, entry.body, entry.etag, PUBLIC)
    body, etag = _personal_body(entry, states)
    return _respond(request, body, etag, PRIVATE)


async def _cached_entry(request: Request) -> CachedBody | None:
    """This request's entry at the current generation, read without any session; None
    when the cheap reader cannot answer or nothing is cached."""
    cache = catalog_cache(request.app)
    if cache.reader is None:
        return None
    generation = await cache.reader.read()
    if generation is None:
        return None
    return cache.response(generation, request_key(request))


async def _anonymous_hit(request: Request) -> Response | None:
    entry = await _cached_entry(request)
    if entry is None:
        return None
    return _respond(request, entry.body, entry.etag, PUBLIC)


def _access_token(request: Request) -> str | None:
    """The bearer access token (a JWT); None for anything else, which the ordinary route
    judges (a publishing token's scopes, a malformed header)."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token or is_publishing_token(token):
        return None
    return token


async def _personal_hit(request: Request) -> Response | None:
    """A logged-in caller's hit: the token's signature is checked here, and one query says
    both that the account exists and what it bought of the entry's plugins. Anything
    else (an invalid token, an account gone) takes the ordinary route and its 401."""
    token = _access_token(request)
    if token is None:
        return None
    claims = decode_access_token(token, request.app.state.secret)
    if claims is None:
        return None
    entry = await _cached_entry(request)
    if entry is None:
        return None
    sessions: async_sessionmaker[AsyncSession] = request.app.state.sessionmaker
    async with sessions() as session:
        lookup = _caller_purchase_states(request.app)
        states = await lookup(session, claims.user_id, entry.plugin_ids)
    if states is None:
        return None
    request.state.user_id = claims.user_id
    return _personal_response(request, entry, states)


class CachedPublicRoute(ApiRoute):
    """A public read whose cache hits skip FastAPI's dependency solving.

    An anonymous hit costs one generation check and hands over the pre-encoded bytes: the
    price of a request to a bare endpoint, or less. A logged-in hit adds the token's
    signature and one query (the account and its purchase states) for its overlay.
    Everything else (a miss, invalid parameters or tokens) takes the ordinary route, which
    builds and stores the entry.
    """

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def route(request: Request) -> Response:
            if request.method == "GET":
                if "authorization" not in request.headers:
                    hit = await _anonymous_hit(request)
                else:
                    hit = await _personal_hit(request)
                if hit is not None:
                    return hit
            return await handler(request)

        return route
