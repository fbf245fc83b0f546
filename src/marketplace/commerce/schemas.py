"""User group shapes (CONTRACT 7): download information, installs, purchases, ratings."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field, Strict

from marketplace.catalog.schemas import PublicPluginOut
from marketplace.kit.schemas import (
    INTEGRAL_FLOATS,
    InputModel,
    Money,
    OutputModel,
    RequiredText,
    SafeText,
)


class InstallIn(InputModel):
    version: Annotated[str, Field(min_length=1, max_length=100)]


class InstallOut(OutputModel):
    plugin_id: str
    version: str
    installed_at: datetime


class InstalledItem(OutputModel):
    plugin: PublicPluginOut
    version: str
    installed_at: datetime
    update_available: bool


class InstalledList(OutputModel):
    items: list[InstalledItem]


class PurchaseIn(InputModel):
    idempotency_key: Annotated[RequiredText, Field(min_length=1, max_length=200)] | None = None


class PurchaseOut(OutputModel):
    """status: paid, or pending while a payment gateway has not confirmed yet.

    expiresAt: null for a permanent purchase (and while pending)."""

    id: str
    plugin_id: str | None
    price: Money
    validity_days: int | None
    purchased_at: datetime
    expires_at: datetime | None
    status: Literal["pending", "paid", "failed"]


class RateIn(InputModel):
    score: Annotated[int, Strict(), Field(ge=1, le=5), INTEGRAL_FLOATS]
    comment: Annotated[SafeText, Field(max_length=2000)] | None = None


class RatingOut(OutputModel):
    id: str
    plugin_id: str
    score: int
    comment: str | None
    created_at: datetime
    updated_at: datetime
    rating_average: Money | None
    rating_count: int
