"""Which error codes an operation can answer, declared where they are raised.

`@raises(PluginNotFound, PluginNotOwned)` on an endpoint or on a dependency records its
(status, code) pairs on the function. The OpenAPI document of an operation lists the
union over the endpoint and every dependency it reaches (`auth.openapi`), so a lookup
dependency declares its 404 once and every route using it lists it; a route lists what its
own body raises. The codes come from the error classes, so a renamed code cannot drift.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from marketplace.errors import AppError

ErrorCode = tuple[int, str]  # (HTTP status, CONTRACT code)
ATTRIBUTE = "__error_codes__"

F = TypeVar("F", bound=Callable[..., Any])


def code_of(error: type[AppError] | AppError) -> ErrorCode:
    return error.status_code, error.code


def raises(*errors: type[AppError] | AppError) -> Callable[[F], F]:
    """Record on the decorated function the errors it (or what it calls) may answer."""

    def mark(function: F) -> F:
        declare(function, errors)
        return function

    return mark


def declare(function: Callable[..., Any], errors: Iterable[type[AppError] | AppError]) -> None:
    """`raises` for functions built at run time (a kind's generic endpoints)."""
    found = set(declared(function)) | {code_of(error) for error in errors}
    setattr(function, ATTRIBUTE, frozenset(found))


def declared(function: Callable[..., Any]) -> frozenset[ErrorCode]:
    codes: frozenset[ErrorCode] = getattr(function, ATTRIBUTE, frozenset())
    return codes
