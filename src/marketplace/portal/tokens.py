"""The publisher's publishing tokens (CONTRACT 11): the list, a new token shown once, and
revoking one. The same service as /api/v1/auth/tokens: the same limits and checks."""

from __future__ import annotations

from datetime import UTC, datetime

from fastapi import Request, Response
from pydantic import ValidationError

from marketplace.accounts import tokens
from marketplace.accounts.token_schemas import TokenCreateIn
from marketplace.db import DbSession
from marketplace.errors import AppError
from marketplace.web.deps import PostedForm, SignedInAccount
from marketplace.web.forms import Form, first_problem
from marketplace.web.http import page, redirect, site_router
from marketplace.web.sites import PORTAL

router = site_router(PORTAL)

LABELS = {
    "name": "Name",
    "scopes": "Scopes",
    "plugins": "Plugins",
    "expiresInDays": "Expires in (days)",
}
NOTICES = {"revoked": "Token revoked: it stops working at once."}
DEFAULT_DAYS = 90


def _token_request(form: Form) -> TokenCreateIn:
    """The form as the API's body: scopes are checkboxes, plugins a list of keys separated
    by spaces or commas (empty: every plugin the account may operate)."""
    keys = form.text("plugins").replace(",", " ").split()
    days = form.text("expires_in_days")
    # ASCII digits, and few: "²" passes str.isdigit but not int(); the model refuses
    # anything else in words.
    whole = days.isascii() and days.isdigit() and len(days) <= 6
    return TokenCreateIn.model_validate(
        {
            "name": form.text("name"),
            "scopes": [scope for scope in ("read", "publish") if form.checked(f"scope_{scope}")],
            "plugins": keys or None,
            "expiresInDays": int(days) if whole else days,
        }
    )


async def _tokens_page(
    request: Request,
    account: SignedInAccount,
    db: DbSession,
    *,
    new_token: str | None = None,
    notice: str | None = None,
    error: str | None = None,
    form: Form | None = None,
    status: int = 200,
) -> Response:
    return page(
        request,
        "tokens.html",
        status=status,
        title="Publishing tokens",
        nav="tokens",
        tokens=await tokens.tokens_of(db, account.user),
        new_token=new_token,
        now=datetime.now(UTC),
        notice=notice,
        error=error,
        form=form or Form({"expires_in_days": str(DEFAULT_DAYS), "scope_publish": "on"}),
    )


@router.get("/portal/tokens")
async def token_list(
    request: Request, account: SignedInAccount, db: DbSession, done: str | None = None
) -> Response:
    return await _tokens_page(request, account, db, notice=NOTICES.get(done or ""))


@router.post("/portal/tokens")
async def new_token(
    request: Request, account: SignedInAccount, form: PostedForm, db: DbSession
) -> Response:
    """The token is in this answer only (never stored, never in a redirect's address)."""
    try:
        body = _token_request(form)
    except ValidationError as error:
        return await _tokens_page(
            request, account, db, error=first_problem(error, LABELS), form=form, status=400
        )
    try:
        _row, token = await tokens.issue(
            db,
            account.user,
            name=body.name,
            scopes=[scope.value for scope in body.scopes],
            plugins=body.plugins,
            expires_in_days=body.expires_in_days,
        )
    except AppError as error:
        await db.rollback()
        return await _tokens_page(
            request, account, db, error=error.message, form=form, status=error.status_code
        )
    return await _tokens_page(request, account, db, new_token=token, status=201)


@router.post("/portal/tokens/{token_id}/revoke")
async def revoke_token(
    token_id: str, account: SignedInAccount, _form: PostedForm, db: DbSession
) -> Response:
    await tokens.revoke(db, account.user, token_id)
    return redirect("/portal/tokens?done=revoked")
