"""HTML responses for the sites: pages, redirects, cookies, and error pages in place of
the API's JSON envelope. A site's route class turns every failure into a page, never a
trace."""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping
from typing import Any
from urllib.parse import urlencode

import structlog
from fastapi import APIRouter, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException

from marketplace.config import Settings
from marketplace.errors import AppError
from marketplace.web.sites import Site
from marketplace.web.templating import render

log = structlog.get_logger("marketplace.web")

# Login page notices, by key: the page never echoes text it was sent.
NOTICES = {
    "expired": "Your session has expired. Please log in again.",
    "logged_out": "You have logged out.",
}

TITLES = {
    400: "Request refused",
    403: "Not allowed",
    404: "Not found",
    405: "Not found",
    409: "Not possible now",
    413: "Too large",
    429: "Too many requests",
    500: "Something went wrong",
}


class LoginRequired(Exception):
    """No usable session: go to the login page, then come back to `next_path`."""

    def __init__(self, next_path: str | None, notice: str) -> None:
        super().__init__(notice)
        self.next_path = next_path
        self.notice = notice


class PageRefused(Exception):
    """A refusal shown as a page of its own (wrong role, bad CSRF token, unknown page)."""

    def __init__(self, status: int, message: str, *, end_session: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.end_session = end_session


def site_of(request: Request) -> Site:
    """The site whose route is answering (its route class put it on the request)."""
    site: Site = request.state.site
    return site


def page(
    request: Request,
    template: str,
    *,
    status: int = 200,
    headers: Mapping[str, str] | None = None,
    **context: Any,
) -> HTMLResponse:
    """A page of the request's site; the signed-in account (if any) and its session's CSRF
    token come along."""
    signed_in = getattr(request.state, "signed_in", None)
    context.setdefault("site", site_of(request))
    context.setdefault("signed_in", signed_in)
    context.setdefault("csrf_token", signed_in.csrf_token if signed_in else "")
    context.setdefault("nav", "")
    return HTMLResponse(
        render(context["site"].key, template, context), status_code=status, headers=headers
    )


def error_page(
    request: Request, status: int, message: str, headers: Mapping[str, str] | None = None
) -> HTMLResponse:
    title = TITLES.get(status, "Request refused")
    return page(request, "error.html", status=status, headers=headers, title=title, message=message)


def redirect(url: str) -> RedirectResponse:
    return RedirectResponse(url, status_code=303)


def login_url(site: Site, notice: str, next_path: str | None) -> str:
    query = {"m": notice} | ({"next": next_path} if next_path else {})
    return f"{site.login_path}?{urlencode(query)}"


def set_cookie(
    response: Response, settings: Settings, site: Site, name: str, value: str, max_age: int
) -> None:
    response.set_cookie(
        name,
        value,
        max_age=max_age,
        path=site.prefix,
        secure=settings.public_url.startswith("https://"),
        httponly=True,
        samesite="strict",
    )


def clear_cookie(response: Response, settings: Settings, site: Site, name: str) -> None:
    response.delete_cookie(
        name,
        path=site.prefix,
        secure=settings.public_url.startswith("https://"),
        httponly=True,
        samesite="strict",
    )


def _settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


def _failure_response(request: Request, exc: Exception) -> Response:
    site = site_of(request)
    if isinstance(exc, LoginRequired):
        response: Response = redirect(login_url(site, exc.notice, exc.next_path))
        clear_cookie(response, _settings(request), site, site.session_cookie)
        return response
    if isinstance(exc, PageRefused):
        response = error_page(request, exc.status, exc.message)
        if exc.end_session:
            clear_cookie(response, _settings(request), site, site.session_cookie)
        return response
    if isinstance(exc, AppError):
        return error_page(request, exc.status_code, exc.message, exc.headers)
    if isinstance(exc, RequestValidationError):
        return error_page(request, 400, "The address or form is not valid.")
    if isinstance(exc, HTTPException):
        return error_page(request, exc.status_code, str(exc.detail))
    log.error("site page failed", site=site.key, exc_info=exc)
    return error_page(request, 500, "The page could not be shown. Nothing was changed.")


class SiteRoute(APIRoute):
    """Every failure of a site's route (its dependencies included) becomes a page.

    The request's transaction has already been rolled back when an error gets here: the
    session dependency ends inside the handler this wraps.
    """

    site: Site

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        site = self.site

        async def site_handler(request: Request) -> Response:
            request.state.site = site
            try:
                return await handler(request)
            except Exception as exc:
                return _failure_response(request, exc)

        return site_handler


def site_router(site: Site) -> APIRouter:
    """A router of one site's HTML pages: kept out of the OpenAPI document (it describes
    JSON)."""
    route_class = type(f"{site.key.title()}Route", (SiteRoute,), {"site": site})
    return APIRouter(route_class=route_class, include_in_schema=False)
