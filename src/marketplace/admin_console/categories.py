"""Categories: list, add, rename, delete when unused (the admin API's service)."""

from __future__ import annotations

from typing import Any

from fastapi import Request, Response
from pydantic import BaseModel, ValidationError
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.db import DbSession
from marketplace.errors import AppError
from marketplace.models import Plugin, Scenario
from marketplace.plugins import service
from marketplace.plugins.schemas import CategoryIn, CategoryUpdateIn
from marketplace.web.deps import PostedForm, SignedInAccount
from marketplace.web.forms import Form, first_problem
from marketplace.web.http import page, redirect, site_router
from marketplace.web.sites import CONSOLE

router = site_router(CONSOLE)

PATH = "/console/categories"
LABELS = {"key": "Key", "name": "Name", "nameZh": "Chinese name", "sortOrder": "Sort order"}
DONE = {
    "added": "Category added.",
    "renamed": "Category saved.",
    "deleted": "Category deleted.",
}


class FormRefused(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


async def _usage(db: AsyncSession) -> dict[str, int]:
    used: dict[str, int] = {}
    for column in (Plugin.category, Scenario.category):
        for key, count in (await db.execute(select(column, func.count()).group_by(column))).all():
            used[key] = used.get(key, 0) + count
    return used


async def _render(
    request: Request,
    db: AsyncSession,
    *,
    error: str | None = None,
    draft: dict[str, str] | None = None,
    status: int = 200,
) -> Response:
    done = request.query_params.get("done", "")
    return page(
        request,
        "categories.html",
        status=status,
        title="Categories",
        nav="categories",
        categories=await service.list_categories(db),
        usage=await _usage(db),
        error=error,
        draft=draft or {},
        notice=DONE.get(done) if error is None else None,
    )


def _sort_order(form: Form) -> int | None:
    raw = form.text("sort_order")
    if not raw:
        return None
    try:
        return int(raw)
    except ValueError:
        raise FormRefused("Sort order: must be a whole number") from None


def _body(model: type[BaseModel], values: dict[str, Any]) -> Any:
    try:
        return model.model_validate({k: v for k, v in values.items() if v is not None})
    except ValidationError as error:
        raise FormRefused(first_problem(error, LABELS)) from None


async def _apply(db: AsyncSession, form: Form) -> str:
    action = form.text("action")
    key = form.text("key")
    if action == "add":
        body = _body(
            CategoryIn,
            {
                "key": key,
                "name": form.text("name"),
                "nameZh": form.text("name_zh"),
                "sortOrder": _sort_order(form) or 0,
            },
        )
        await service.add_category(db, body)
        return "added"
    if action == "rename":
        body = _body(
            CategoryUpdateIn,
            {
                "name": form.text("name") or None,
                "nameZh": form.text("name_zh") or None,
                "sortOrder": _sort_order(form),
            },
        )
        await service.update_category(db, key, body)
        return "renamed"
    if action == "delete":
        await service.delete_category(db, key)
        return "deleted"
    raise FormRefused("Unknown action.")


@router.get(PATH)
async def categories_page(request: Request, _reviewer: SignedInAccount, db: DbSession) -> Response:
    return await _render(request, db)


@router.post(PATH)
async def change_category(
    request: Request, _reviewer: SignedInAccount, form: PostedForm, db: DbSession
) -> Response:
    draft = {k: form.text(k) for k in ("key", "name", "name_zh", "sort_order")}
    draft["action"] = form.text("action")
    try:
        outcome = await _apply(db, form)
    except FormRefused as refused:
        await db.rollback()
        return await _render(request, db, error=refused.message, draft=draft, status=400)
    except AppError as error:
        # Deleting a used category is refused with the service's own message (409).
        await db.rollback()
        return await _render(
            request, db, error=error.message, draft=draft, status=error.status_code
        )
    return redirect(f"{PATH}?done={outcome}")
