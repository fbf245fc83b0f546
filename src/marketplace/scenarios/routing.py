"""The scenario groups answer 400 SCENARIO_VALIDATION_FAILED, not VALIDATION_FAILED, when
a scenario body or package form does not validate (CONTRACT 1 and 8), with the same
`details.fields`. Query parameters (page, pageSize, ...) keep the generic code."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError

from marketplace.errors import ScenarioValidationFailed, ValidationFailed
from marketplace.kit.errors_http import validation_fields, validation_summary
from marketplace.kit.routing import ApiRoute


def scenario_validation_failed(errors: list[Any]) -> ScenarioValidationFailed:
    fields = validation_fields(errors)
    return ScenarioValidationFailed(validation_summary(fields), details={"fields": fields})


def _only_body(errors: list[Any]) -> bool:
    return all(tuple(e.get("loc", ()))[:1] == ("body",) for e in errors)


class ScenarioRoute(ApiRoute):
    """An APIRoute whose body and form validation failures carry the scenario code."""

    body_validation_error = ScenarioValidationFailed

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def scenario_handler(request: Request) -> Response:
            try:
                return await handler(request)
            except RequestValidationError as exc:
                errors = list(exc.errors())
                if not _only_body(errors):
                    raise
                raise scenario_validation_failed(errors) from None
            except ValidationFailed as exc:  # the streamed form and handler-level checks
                raise ScenarioValidationFailed(exc.message, details=exc.details) from None

        return scenario_handler
