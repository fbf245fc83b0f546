"""Who is reviewing: the session cookie → a live session → an account that may review.

Order of checks on every console request: a session cookie (else the login page), a live
session (else the login page, "expired"), the account's role read now (else a 403 page and
the session ends), and for a form the session's CSRF token (else a 403 page). Nothing is
written before they all pass, except the session's own last-seen time.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from marketplace.admin_console import sessions
from marketplace.admin_console.forms import Form, read_form
from marketplace.admin_console.http import SESSION_COOKIE, LoginRequired, PageRefused
from marketplace.admin_console.security import same_token
from marketplace.admin_console.sessions import Reviewer
from marketplace.config import Settings

NOT_A_REVIEWER = (
    "The review console is for administrators. This account cannot use it; "
    "ask a SUPER_ADMIN for the ADMIN role."
)
BAD_CSRF = (
    "This form did not come from your current console session, so nothing was changed. "
    "Go back, reload the page and try again."
)


def _return_path(request: Request) -> str:
    # A form's page has the same path as the form's target; only a page's query is kept.
    path = request.url.path
    if request.method == "GET" and request.url.query:
        return f"{path}?{request.url.query}"
    return path


async def console_reviewer(request: Request) -> Reviewer:
    token = request.cookies.get(SESSION_COOKIE)
    if not token:
        raise LoginRequired(_return_path(request), "login")
    settings: Settings = request.app.state.settings
    # Its own short write transaction (the last-seen time), ended before the page's own.
    factory: async_sessionmaker[AsyncSession] = request.app.state.write_sessionmaker
    async with factory.begin() as db:
        reviewer = await sessions.resume(db, token, settings)
        if reviewer is not None and not reviewer.allowed:
            await sessions.end(db, reviewer.session_id)
    if reviewer is None:
        raise LoginRequired(_return_path(request), "expired")
    if not reviewer.allowed:
        raise PageRefused(403, NOT_A_REVIEWER, end_session=True)
    request.state.console_reviewer = reviewer
    return reviewer


ConsoleReviewer = Annotated[Reviewer, Depends(console_reviewer)]


async def posted_form(request: Request, reviewer: ConsoleReviewer) -> Form:
    """The posted form, once its CSRF token matched the session's (compared in constant
    time; missing or wrong is a 403 page and nothing changes)."""
    form = await read_form(request)
    if not same_token(form.fields.get("csrf_token"), reviewer.csrf_token):
        raise PageRefused(403, BAD_CSRF)
    return form


PostedForm = Annotated[Form, Depends(posted_form)]
