"""Who is signed in: the site's session cookie → a live session → an account the site admits.

Order of checks on every site request: a session cookie (else the login page), a live
session of this site (else the login page, "expired"), the account's role read now (else a
403 page and the session ends), and for a form the session's CSRF token (else a 403 page).
Nothing is written before they all pass, except the session's own last-seen time.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from marketplace.config import Settings
from marketplace.web import sessions
from marketplace.web.forms import Form, read_form
from marketplace.web.http import LoginRequired, PageRefused, site_of
from marketplace.web.security import same_token
from marketplace.web.sessions import SignedIn

BAD_CSRF = (
    "This form did not come from your current session, so nothing was changed. "
    "Go back, reload the page and try again."
)


def _return_path(request: Request) -> str:
    # A form's page has the same path as the form's target; only a page's query is kept.
    path = request.url.path
    if request.method == "GET" and request.url.query:
        return f"{path}?{request.url.query}"
    return path


async def signed_in(request: Request) -> SignedIn:
    site = site_of(request)
    token = request.cookies.get(site.session_cookie)
    if not token:
        raise LoginRequired(_return_path(request), "login")
    settings: Settings = request.app.state.settings
    # Its own short write transaction (the last-seen time), ended before the page's own.
    factory: async_sessionmaker[AsyncSession] = request.app.state.write_sessionmaker
    async with factory.begin() as db:
        found = await sessions.resume(db, site, token, settings)
        if found is not None and not found.allowed:
            await sessions.end(db, found.session_id)
    if found is None:
        raise LoginRequired(_return_path(request), "expired")
    if not found.allowed:
        raise PageRefused(403, site.not_allowed, end_session=True)
    request.state.signed_in = found
    return found


SignedInAccount = Annotated[SignedIn, Depends(signed_in)]


async def posted_form(request: Request, account: SignedInAccount) -> Form:
    """The posted form, once its CSRF token matched the session's (compared in constant
    time; missing or wrong is a 403 page and nothing changes)."""
    form = await read_form(request)
    if not same_token(form.fields.get("csrf_token"), account.csrf_token):
        raise PageRefused(403, BAD_CSRF)
    return form


PostedForm = Annotated[Form, Depends(posted_form)]
