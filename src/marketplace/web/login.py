"""Log in and log out of a site: the API's accounts, password check and login rate limits."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request, Response
from pydantic import ValidationError

from marketplace.accounts import service as accounts
from marketplace.accounts.schemas import LoginIn
from marketplace.auth.ratelimit import RateLimiter
from marketplace.db import DbSession
from marketplace.errors import RateLimitExceeded, Unauthorized
from marketplace.kit.state import AppSettings
from marketplace.web import sessions
from marketplace.web.deps import PostedForm, SignedInAccount
from marketplace.web.forms import read_form
from marketplace.web.http import (
    NOTICES,
    PageRefused,
    clear_cookie,
    login_url,
    page,
    redirect,
    set_cookie,
    site_of,
    site_router,
)
from marketplace.web.security import new_token, safe_next, same_token
from marketplace.web.sites import Site

LOGIN_FORM_SECONDS = 3600
# The API's message for every failed login (unknown e-mail and wrong password alike).
LOGIN_FAILED = "Invalid e-mail or password"
STALE_LOGIN_FORM = (
    "This login form has expired or your browser did not send its cookie. "
    "Reload the page and try again."
)


def _login_page(
    request: Request,
    *,
    next_path: str,
    csrf_token: str,
    email: str = "",
    notice: str | None = None,
    error: str | None = None,
    status: int = 200,
    headers: dict[str, str] | None = None,
) -> Response:
    return page(
        request,
        "login.html",
        status=status,
        headers=headers,
        title="Log in",
        email=email,
        next_path=next_path,
        notice=notice,
        error=error,
        csrf_token=csrf_token,
    )


async def login_form(
    request: Request,
    settings: AppSettings,
    m: Annotated[str | None, Query(max_length=20)] = None,
    next_path: Annotated[str | None, Query(alias="next", max_length=2000)] = None,
) -> Response:
    site = site_of(request)
    # The login form's CSRF token pairs a cookie with a hidden field (double submit); a
    # token already set is kept, so two open login tabs both work.
    token = request.cookies.get(site.login_cookie) or new_token()
    response = _login_page(
        request,
        next_path=safe_next(site, next_path),
        csrf_token=token,
        notice=site.login_notice if m == "login" else NOTICES.get(m or ""),
    )
    set_cookie(response, settings, site, site.login_cookie, token, LOGIN_FORM_SECONDS)
    return response


async def _hit_login_limits(limiter: RateLimiter, client: str, email: str) -> None:
    # The API's two windows (contract 9): per client address and per e-mail.
    await limiter.hit(limiter.login, "login-ip", client)
    await limiter.hit(limiter.login, "login-email", email.lower())


async def login(request: Request, db: DbSession, settings: AppSettings) -> Response:
    site = site_of(request)
    form = await read_form(request)
    cookie_token = request.cookies.get(site.login_cookie, "")
    if not cookie_token or not same_token(form.fields.get("csrf_token"), cookie_token):
        raise PageRefused(403, STALE_LOGIN_FORM)
    email = form.fields.get("email", "").strip()
    next_path = safe_next(site, form.fields.get("next"))

    def again(error: str, status: int, headers: dict[str, str] | None = None) -> Response:
        return _login_page(
            request,
            next_path=next_path,
            csrf_token=cookie_token,
            email=email,
            error=error,
            status=status,
            headers=headers,
        )

    try:
        credentials = LoginIn.model_validate(
            {"email": email, "password": form.fields.get("password", "")}
        )
    except ValidationError:
        return again(LOGIN_FAILED, 401)
    client = request.client.host if request.client else "unknown"
    try:
        await _hit_login_limits(request.app.state.limiter, client, credentials.email)
    except RateLimitExceeded as exc:
        wait = exc.headers.get("Retry-After", "60")
        return again(f"Too many login attempts. Try again in {wait} s.", 429, exc.headers)
    try:
        user = await accounts.authenticate(db, credentials.email, credentials.password)
    except Unauthorized as exc:
        return again(exc.message, 401)
    if not site.may_enter(user):
        raise PageRefused(403, site.not_allowed)
    old = request.cookies.get(site.session_cookie)
    if old:
        await sessions.forget(db, site, old)
    token = await sessions.start(db, site, user, settings)
    response = redirect(next_path)
    max_age = int(sessions.lifetime(settings).total_seconds())
    set_cookie(response, settings, site, site.session_cookie, token, max_age)
    clear_cookie(response, settings, site, site.login_cookie)
    return response


async def logout(
    request: Request,
    account: SignedInAccount,
    _form: PostedForm,
    db: DbSession,
    settings: AppSettings,
) -> Response:
    site = site_of(request)
    await sessions.end(db, account.session_id)
    response = redirect(login_url(site, "logged_out", None))
    clear_cookie(response, settings, site, site.session_cookie)
    return response


def login_routes(site: Site) -> APIRouter:
    """The site's login page, login form and logout."""
    router = site_router(site)
    router.add_api_route(site.login_path, login_form, methods=["GET"])
    router.add_api_route(site.login_path, login, methods=["POST"])
    router.add_api_route(site.logout_path, logout, methods=["POST"])
    return router
