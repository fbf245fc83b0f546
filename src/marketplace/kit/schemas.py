"""Base schemas: camelCase JSON, forbidden extra fields on input, the success envelope."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Annotated, Any, ClassVar, Generic, Literal, Self, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    WithJsonSchema,
    model_validator,
)
from pydantic.alias_generators import to_camel

from marketplace_rules.text import (
    has_forbidden_chars,
    is_blank,
    non_blank_visible_pattern,
    trimmed,
    visible_text_pattern,
)

T = TypeVar("T")


class OutputModel(BaseModel):
    """Response shapes: camelCase, built from ORM objects. No defaults: a missing field is a bug."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, from_attributes=True)


NOT_AN_OBJECT = "must be a JSON object"


class InvalidJSON:
    """Stands in for a request body that is not a JSON object (kit.routing); never validates."""

    def __init__(self, message: str) -> None:
        self.message = message

    @classmethod
    def undecodable(cls, error: json.JSONDecodeError) -> InvalidJSON:
        return cls(f"invalid JSON: {error.msg} (at character {error.pos})")


def never_null_schema(schema: dict[str, Any], cls: type[BaseModel]) -> None:
    """OpenAPI for fields that may be left out but not sent as null (`never_null`)."""
    never_null: tuple[str, ...] = getattr(cls, "never_null", ())
    properties = schema.get("properties", {})
    for name in never_null:
        field = cls.model_fields[name]
        alias = field.alias or name
        prop = properties.get(alias)
        if prop is None or "anyOf" not in prop:
            continue
        kept = [option for option in prop["anyOf"] if option.get("type") != "null"]
        if len(kept) == 1:
            rest = {k: v for k, v in prop.items() if k not in ("anyOf", "default")}
            properties[alias] = {**kept[0], **rest}


class InputModel(BaseModel):
    """Request bodies: camelCase only, unknown fields refused (400 naming the field), and
    no coercion of booleans and integers (`StrictBool`; `Strict()` with `INTEGRAL_FLOATS`):
    "yes" is not a boolean and "30" is not a number (CONTRACT 1).

    `never_null` names optional fields that are omitted to leave a value unchanged but
    refused as null; their schema then says so (no `null` among the types).

    Strings are checked as sent (lengths and patterns before any trimming), so what OpenAPI
    allows is what the service accepts; once every check passed, string fields (and lists
    of strings) are trimmed, as they always were stored."""

    never_null: ClassVar[tuple[str, ...]] = ()
    # Fields kept exactly as sent (passwords: trimming after the length check would store a
    # shorter secret than the rule allows).
    untrimmed: ClassVar[tuple[str, ...]] = ()

    model_config = ConfigDict(
        alias_generator=to_camel,
        extra="forbid",
        validate_by_name=False,
        json_schema_extra=never_null_schema,
    )

    @model_validator(mode="before")
    @classmethod
    def _json_object_only(cls, data: Any) -> Any:
        # FastAPI validates bodies with from_attributes=True, so without this an
        # undecodable body, `[]` or `"text"` would pass as a model whose fields are all
        # optional: an empty update or a purchase without its idempotencyKey.
        if isinstance(data, InvalidJSON):
            raise ValueError(data.message)
        if not isinstance(data, dict | BaseModel):
            raise ValueError(NOT_AN_OBJECT)
        return data

    @model_validator(mode="after")
    def _trimmed(self) -> Self:
        # After validation: a constraint placed after a validator would see the trimmed text.
        # Plain strings only: an enum member is a str too, and must stay the member.
        for name, value in self.__dict__.items():
            if name in self.untrimmed:
                continue
            if type(value) is str:
                self.__dict__[name] = trimmed(value)
            elif isinstance(value, list) and any(type(item) is str for item in value):
                self.__dict__[name] = [trimmed(i) if type(i) is str else i for i in value]
        return self


class Envelope(BaseModel, Generic[T]):
    success: Literal[True] = True
    data: T


def _money_json(value: Decimal) -> float:
    return float(value)


# Money is Numeric in the database and a JSON number on the wire, never a string.
Money = Annotated[Decimal, PlainSerializer(_money_json, return_type=float, when_used="json")]


def _number_only(value: Any) -> Any:
    # A price is a JSON number: "1" or true are refused, not coerced.
    if isinstance(value, str | bool):
        raise ValueError("must be a number")
    return value


MoneyIn = Annotated[
    Decimal,
    BeforeValidator(_number_only),
    Field(ge=0, max_digits=12, decimal_places=2),
    PlainSerializer(_money_json, return_type=float, when_used="json"),
    # 12 digits, 2 of them decimals: the largest price the Numeric(12, 2) column holds.
    WithJsonSchema(
        {"type": "number", "minimum": 0, "maximum": 9_999_999_999.99, "multipleOf": 0.01}
    ),
]


def _json_integer(value: Any) -> Any:
    # JSON has numbers, not integers: 30.0 is the integer 30 (as JSON Schema's "integer"
    # says), while "30", true and 30.5 stay refused.
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


# The last annotation of a request body's integer field, after `Strict()` and its bounds:
# `Annotated[int, Strict(), Field(ge=.., le=..), INTEGRAL_FLOATS]` refuses strings and
# booleans, accepts 30.0, and OpenAPI shows the bounds as minimum/maximum (put before the
# validator, they would not be).
INTEGRAL_FLOATS = BeforeValidator(_json_integer)


def _clean_text(value: str) -> str:
    if has_forbidden_chars(value):
        raise ValueError("contains invisible or bidirectional-control characters")
    return value


def _not_blank(value: str) -> str:
    if is_blank(value):
        raise ValueError("must not be blank")
    return value


# Free text from clients: refuses characters that can disguise what a reviewer reads.
# The pattern documents the check (a description only: the validator stays the judge).
SafeText = Annotated[
    str, AfterValidator(_clean_text), Field(json_schema_extra={"pattern": visible_text_pattern()})
]
# Text that must say something: not only whitespace, which the schema's pattern says too.
RequiredText = Annotated[
    SafeText,
    AfterValidator(_not_blank),
    Field(json_schema_extra={"pattern": non_blank_visible_pattern()}),
]


def short_text(max_length: int, min_length: int = 0) -> Any:
    return Annotated[SafeText, Field(min_length=min_length, max_length=max_length)]


class ErrorBody(BaseModel):
    code: str = Field(examples=["SCENARIO_NOT_FOUND"])
    message: str
    details: dict[str, Any] = Field(
        description="Optional: `fields` ([{field, message}]) for validation failures, limits"
    )


class ErrorEnvelope(BaseModel):
    """Every error answer (CONTRACT 1)."""

    success: Literal[False]
    error: ErrorBody


# For a router's `responses`: documents the error envelope for 4xx answers (and so replaces
# FastAPI's default 422 entry, which this service never sends: validation failures are 400).
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    "4XX": {"model": ErrorEnvelope, "description": "Error envelope with a stable code"}
}
