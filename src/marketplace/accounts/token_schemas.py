"""Publishing token shapes (CONTRACT 11)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import AfterValidator, Field, Strict

from marketplace.auth.pat import Scope
from marketplace.kit.schemas import INTEGRAL_FLOATS, InputModel, OutputModel, RequiredText
from marketplace_rules.limits import PLUGIN_KEY_MAX_LENGTH, PLUGIN_KEY_MIN_LENGTH
from marketplace_rules.manifest import plugin_key_findings
from marketplace_rules.vocabulary import PLUGIN_KEY_PATTERN, UUID_PATTERN

TOKEN_NAME_MAX = 100
TOKEN_PLUGINS_MAX = 100
TOKEN_DAYS_MAX = 365


def _unique(values: list[str]) -> list[str]:
    if len(set(values)) != len(values):
        raise ValueError("must not repeat an item")
    return values


def _plugin_key(value: str) -> str:
    findings = plugin_key_findings(value, "plugins")
    if findings:
        raise ValueError(findings[0].message)
    return value


PluginKey = Annotated[
    str,
    AfterValidator(_plugin_key),
    Field(
        json_schema_extra={
            "pattern": f"^{PLUGIN_KEY_PATTERN.pattern}$",
            "minLength": PLUGIN_KEY_MIN_LENGTH,
            "maxLength": PLUGIN_KEY_MAX_LENGTH,
            "not": {"pattern": f"^{UUID_PATTERN.pattern}$"},
        }
    ),
]


class TokenCreateIn(InputModel):
    name: Annotated[RequiredText, Field(min_length=1, max_length=TOKEN_NAME_MAX)]
    scopes: Annotated[
        list[Scope],
        Field(min_length=1, max_length=2, json_schema_extra={"uniqueItems": True}),
        AfterValidator(_unique),
    ]
    # None: every plugin of the owner; a list: only those (at least one).
    plugins: (
        Annotated[
            list[PluginKey],
            Field(
                min_length=1, max_length=TOKEN_PLUGINS_MAX, json_schema_extra={"uniqueItems": True}
            ),
            AfterValidator(_unique),
        ]
        | None
    ) = None
    expires_in_days: Annotated[int, Strict(), Field(ge=1, le=TOKEN_DAYS_MAX), INTEGRAL_FLOATS]


class TokenOut(OutputModel):
    id: str
    name: str
    scopes: list[str]
    plugins: list[str] | None
    expires_at: datetime
    created_at: datetime
    last_used_at: datetime | None
    revoked_at: datetime | None
    revoked_reason: str | None


class NewTokenOut(TokenOut):
    """The answer to creation: the only time `token` is shown."""

    token: str


class TokenList(OutputModel):
    items: list[TokenOut]
