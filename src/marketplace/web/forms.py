"""Posted forms: URL-encoded, small, read with a cap, every field a string."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qsl

from fastapi import Request
from pydantic import ValidationError
from starlette.requests import ClientDisconnect

from marketplace.web.http import PageRefused

FORM_MAX_BYTES = 64 * 1024  # a note is at most 5,000 characters
FORM_MAX_FIELDS = 50


@dataclass(frozen=True)
class Form:
    fields: dict[str, str]

    def text(self, name: str) -> str:
        """The field's value, surrounding spaces removed; "" when absent."""
        return self.fields.get(name, "").strip()

    def checked(self, name: str) -> bool:
        return name in self.fields


async def read_form(request: Request) -> Form:
    declared = request.headers.get("content-length", "")
    if declared.isascii() and declared.isdigit() and int(declared) > FORM_MAX_BYTES:
        raise PageRefused(413, "The form is too large.")
    body = bytearray()
    try:
        async for chunk in request.stream():
            body.extend(chunk)
            if len(body) > FORM_MAX_BYTES:
                raise PageRefused(413, "The form is too large.")
    except ClientDisconnect:
        raise PageRefused(400, "The form arrived incomplete.") from None
    if not body:
        return Form({})  # nothing sent: no fields, so no CSRF token either (403 follows)
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type != "application/x-www-form-urlencoded":
        raise PageRefused(400, "This site accepts only its own forms.")
    try:
        pairs = parse_qsl(
            body.decode("utf-8"),
            keep_blank_values=True,
            strict_parsing=False,
            max_num_fields=FORM_MAX_FIELDS,
        )
    except (UnicodeDecodeError, ValueError):
        raise PageRefused(400, "The form could not be read.") from None
    return Form(dict(pairs))


def first_problem(error: ValidationError, labels: dict[str, str]) -> str:
    """The first validation problem in words for the form: "Note: at most 5000 characters"."""
    problem = error.errors()[0]
    field = str(problem["loc"][-1]) if problem["loc"] else ""
    message = str(problem["msg"]).removeprefix("Value error, ")
    label = labels.get(field, field)
    return f"{label}: {message}" if label else message
