"""The route class every router uses.

FastAPI decodes a JSON body before it runs any dependency, so a malformed body would
answer 400 ahead of 401/403/404 (CONTRACT 1 orders those first). The request handed to
FastAPI here decodes leniently: an undecodable body becomes an `InvalidJSON` value that
fails validation after the dependencies ran, and the error handler names it as such.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.routing import APIRoute

from marketplace.kit.schemas import ERROR_RESPONSES


class InvalidJSON:
    """Stands in for a body that is not JSON; never validates as anything."""

    def __init__(self, error: json.JSONDecodeError) -> None:
        self.message = f"invalid JSON: {error.msg} (at character {error.pos})"


class _LenientJSONRequest(Request):
    async def json(self) -> Any:
        try:
            return await super().json()
        except json.JSONDecodeError as error:
            return InvalidJSON(error)
        except UnicodeDecodeError as error:
            return InvalidJSON(json.JSONDecodeError("not UTF-8", "", error.start))


class ApiRoute(APIRoute):
    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def lenient_handler(request: Request) -> Response:
            return await handler(_LenientJSONRequest(request.scope, request.receive))

        return lenient_handler


def api_router(**kwargs: Any) -> APIRouter:
    """An APIRouter whose routes check auth before the body, documenting the envelope."""
    kwargs.setdefault("route_class", ApiRoute)
    kwargs.setdefault("responses", ERROR_RESPONSES)
    return APIRouter(**kwargs)
