"""Organization shapes (CONTRACT 17)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import AfterValidator, Field

from marketplace.accounts.schemas import Email
from marketplace.kit.schemas import InputModel, OutputModel, RequiredText
from marketplace.models import OrgRole
from marketplace_rules.limits import PLUGIN_KEY_MAX_LENGTH, PLUGIN_KEY_MIN_LENGTH
from marketplace_rules.manifest import is_valid_plugin_key, plugin_key_exclusions
from marketplace_rules.vocabulary import PLUGIN_KEY_PATTERN


def _slug(value: str) -> str:
    if not is_valid_plugin_key(value):
        raise ValueError(
            "must be 3-64 lowercase letters, digits and hyphens, start with a letter, "
            "and not look like a UUID (the pluginKey rule)"
        )
    return value


# The pluginKey rule (CONTRACT 17), checked as sent: no trimming into a valid slug.
OrgSlug = Annotated[
    str,
    AfterValidator(_slug),
    Field(
        json_schema_extra={
            "pattern": f"^{PLUGIN_KEY_PATTERN.pattern}$",
            "minLength": PLUGIN_KEY_MIN_LENGTH,
            "maxLength": PLUGIN_KEY_MAX_LENGTH,
            "not": plugin_key_exclusions(),
        }
    ),
]
OrgName = Annotated[RequiredText, Field(min_length=1, max_length=200)]


class OrgCreateIn(InputModel):
    slug: OrgSlug
    name: OrgName


class MemberIn(InputModel):
    email: Email
    role: OrgRole


class TransferIn(InputModel):
    org: OrgSlug


class OrgOut(OutputModel):
    """An organization as the caller sees it: `role` is the caller's own."""

    id: str
    slug: str
    name: str
    role: OrgRole
    created_at: datetime


class OrgItems(OutputModel):
    items: list[OrgOut]


class MemberOut(OutputModel):
    user_id: str
    email: str
    name: str
    role: OrgRole
    added_at: datetime


class MemberItems(OutputModel):
    items: list[MemberOut]


class OrgRef(OutputModel):
    """The organization a plugin belongs to, in every plugin representation."""

    slug: str
    name: str
