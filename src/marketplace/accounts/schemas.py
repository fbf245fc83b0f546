"""Account, token and developer-identity shapes (CONTRACT section 2)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, BeforeValidator, Field, StrictBool

from marketplace.kit.schemas import InputModel, OutputModel, RequiredText, SafeText
from marketplace.models import IdentityStatus, Role
from marketplace_rules.emails import email_problem, openapi_email_schema

_EMAIL_SCHEMA = openapi_email_schema()


def _email(value: object) -> object:
    # Before the model strips whitespace: the documented pattern has none, so " a@b.co " is
    # refused rather than quietly trimmed into an address the document would not allow.
    if isinstance(value, str):
        problem = email_problem(value)
        if problem is not None:
            raise ValueError(problem)
        return value.lower()
    return value  # not a string: the str type refuses it


Email = Annotated[str, BeforeValidator(_email), Field(json_schema_extra=_EMAIL_SCHEMA)]
Name = Annotated[RequiredText, Field(min_length=1, max_length=100)]


class UserOut(OutputModel):
    id: str
    email: str
    name: str
    role: Role
    created_at: datetime


class UserData(OutputModel):
    user: UserOut


def _encodable(value: str) -> str:
    # An unpaired surrogate cannot be encoded, so it could never be hashed or checked.
    try:
        value.encode()
    except UnicodeEncodeError:
        raise ValueError("must be valid Unicode text") from None
    return value


class RegisterIn(InputModel):
    untrimmed = ("password",)

    email: Email
    password: Annotated[str, Field(min_length=8, max_length=128), AfterValidator(_encodable)]
    name: Name


class LoginIn(InputModel):
    untrimmed = ("password",)

    # No format check on login: a malformed e-mail is just a failed login (one 401 for all).
    # The document still says e-mail: nothing else can ever log in.
    email: Annotated[str, Field(max_length=320, json_schema_extra=_EMAIL_SCHEMA)]
    password: Annotated[str, Field(max_length=1024)]


class TokenPair(OutputModel):
    access_token: str
    refresh_token: str
    token_type: Literal["Bearer"]
    expires_in: int
    user: UserOut


class RefreshIn(InputModel):
    refresh_token: Annotated[str, Field(min_length=1, max_length=200)]


class DeveloperRegisterIn(InputModel):
    display_name: Name
    website: Annotated[SafeText, Field(max_length=500)] | None = None


class IdentitySubmitIn(InputModel):
    real_name: Annotated[RequiredText, Field(min_length=1, max_length=200)]
    organization: Annotated[SafeText, Field(max_length=200)] | None = None
    contact_email: Email | None = None


class IdentityStatusOut(OutputModel):
    status: IdentityStatus
    submitted_at: datetime | None
    reviewed_at: datetime | None
    review_note: str | None


class IdentityReviewIn(InputModel):
    approved: StrictBool
    review_note: Annotated[SafeText, Field(max_length=2000)] | None = None


class DeveloperOut(OutputModel):
    id: str
    email: str
    name: str
    role: Role
    display_name: str
    website: str | None
    identity_status: IdentityStatus
    real_name: str | None
    organization: str | None
    contact_email: str | None
    submitted_at: datetime | None
    reviewed_at: datetime | None
    review_note: str | None
    reviewed_by: str | None
    created_at: datetime


class DeveloperCounts(OutputModel):
    all: int
    unverified: int
    pending: int
    verified: int
    rejected: int


class DeveloperList(OutputModel):
    items: list[DeveloperOut]
    total: int
    page: int
    limit: int
    counts: DeveloperCounts


class RoleIn(InputModel):
    role: Role
