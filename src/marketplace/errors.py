"""One error type for the whole service, rendered in the contract's envelope."""

from __future__ import annotations

from typing import Any

from marketplace_rules.limits import ICON_MAX_BYTES, KIB


class AppError(Exception):
    """A failure the client should see: HTTP status, stable code, human message."""

    status_code: int = 400
    code: str = "VALIDATION_FAILED"
    message: str = "Request is invalid"
    # A refusal that is itself a decision to record (a replayed refresh token revokes its
    # family): the request's transaction commits before the error is answered.
    keeps_writes: bool = False

    def __init__(
        self,
        message: str | None = None,
        *,
        details: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.message = message or type(self).message
        self.details = details or {}
        self.headers = headers or {}
        super().__init__(self.message)


class ValidationFailed(AppError):
    status_code = 400
    code = "VALIDATION_FAILED"
    message = "Request is invalid"

    @classmethod
    def field(cls, field: str, message: str) -> ValidationFailed:
        return cls(
            f"{field}: {message}", details={"fields": [{"field": field, "message": message}]}
        )


class InvalidCategory(AppError):
    status_code = 400
    code = "PLUGIN_INVALID_CATEGORY"

    def __init__(self, category: str) -> None:
        super().__init__(f'Invalid category "{category}"', details={"category": category})


class PackageInvalid(AppError):
    status_code = 400
    code = "PLUGIN_PACKAGE_INVALID"
    message = "Plugin package is invalid"


class IconInvalid(AppError):
    status_code = 400
    code = "PLUGIN_ICON_INVALID"
    message = "Icon must be a png, jpeg, svg or webp image"


class PluginIsFree(AppError):
    status_code = 400
    code = "PLUGIN_IS_FREE"
    message = "This plugin is free and cannot be purchased"


class ScenarioValidationFailed(AppError):
    status_code = 400
    code = "SCENARIO_VALIDATION_FAILED"
    message = "Scenario validation failed"

    @classmethod
    def field(cls, field: str, message: str) -> ScenarioValidationFailed:
        return cls(
            f"{field}: {message}", details={"fields": [{"field": field, "message": message}]}
        )


class Unauthorized(AppError):
    status_code = 401
    code = "UNAUTHORIZED"
    message = "Authentication required"


class RefreshTokenReused(Unauthorized):
    """A refresh token already rotated was presented again: its family is revoked."""

    message = "Invalid or expired refresh token"
    keeps_writes = True


class PluginNotPurchased(AppError):
    status_code = 402
    code = "PLUGIN_NOT_PURCHASED"
    message = "This plugin must be purchased first"


class Forbidden(AppError):
    status_code = 403
    code = "FORBIDDEN"
    message = "You do not have permission to do this"


class DeveloperNotVerified(AppError):
    status_code = 403
    code = "DEVELOPER_NOT_VERIFIED"
    message = "Developer identity is not verified"


class PluginNotOwned(AppError):
    status_code = 403
    code = "PLUGIN_NOT_OWNED"
    message = "Only own plugins may be operated"


class ScenarioNotOwned(AppError):
    status_code = 403
    code = "SCENARIO_NOT_OWNED"
    message = "Only own scenarios may be operated"


class VersionNotApproved(AppError):
    status_code = 403
    code = "PLUGIN_VERSION_NOT_APPROVED"
    message = "This version is not approved for download"


class RatingNotAllowed(AppError):
    status_code = 403
    code = "RATING_NOT_ALLOWED"
    message = "Only users who installed or purchased a plugin may rate it"


class NotFound(AppError):
    status_code = 404
    code = "NOT_FOUND"
    message = "Not found"


class PluginNotFound(NotFound):
    code = "PLUGIN_NOT_FOUND"
    message = "Plugin does not exist"


class VersionNotFound(NotFound):
    code = "PLUGIN_VERSION_NOT_FOUND"
    message = "Plugin version does not exist"


class ScenarioNotFound(NotFound):
    code = "SCENARIO_NOT_FOUND"
    message = "Scenario does not exist"


class UserNotFound(NotFound):
    code = "USER_NOT_FOUND"
    message = "User does not exist"


class Conflict(AppError):
    status_code = 409
    code = "CONFLICT"
    message = "Conflict"


class PluginKeyExists(Conflict):
    code = "PLUGIN_KEY_EXISTS"
    message = "pluginKey already exists"


class VersionExists(Conflict):
    code = "PLUGIN_VERSION_EXISTS"
    message = "Plugin version exists"


class ScenarioVersionExists(Conflict):
    code = "SCENARIO_VERSION_EXISTS"
    message = "Scenario version exists"


class EmailExists(Conflict):
    code = "EMAIL_EXISTS"
    message = "E-mail is already registered"


class InvalidState(Conflict):
    code = "INVALID_STATE"
    message = "This move is not allowed in the current state"


class TooLarge(AppError):
    status_code = 413
    code = "PAYLOAD_TOO_LARGE"
    message = "Request body is too large"


class PackageTooLarge(TooLarge):
    code = "PLUGIN_PACKAGE_TOO_LARGE"
    message = "Plugin package is too large"


class ScenarioPackageTooLarge(TooLarge):
    code = "SCENARIO_PACKAGE_TOO_LARGE"
    message = "Scenario package is too large"


class IconTooLarge(TooLarge):
    code = "PLUGIN_ICON_TOO_LARGE"
    message = f"Icon is larger than {ICON_MAX_BYTES // KIB} KB"


class RateLimitExceeded(AppError):
    status_code = 429
    code = "RATE_LIMIT_EXCEEDED"
    message = "Too many requests"


class InternalError(AppError):
    status_code = 500
    code = "INTERNAL_ERROR"
    message = "Internal server error"


# What a 503 asks the client to wait before retrying: long enough for a pool to free up or
# a failover to finish, short enough that a client does not give up on a passing blip.
RETRY_AFTER_SECONDS = 5


class ServiceUnavailable(AppError):
    """A dependency (database, blob store) could not be reached or did not answer within its
    bound: the request may well succeed if retried, so 503 with Retry-After, not 500."""

    status_code = 503
    code = "SERVICE_UNAVAILABLE"
    message = "Service temporarily unavailable; retry later"

    def __init__(self, message: str | None = None, *, retry_after: int = RETRY_AFTER_SECONDS):
        super().__init__(
            message,
            details={"retryAfter": retry_after},
            headers={"Retry-After": str(retry_after)},
        )


class DatabaseUnavailable(ServiceUnavailable):
    message = "The database is unavailable; retry later"


class StorageUnavailable(ServiceUnavailable):
    message = "The file store is unavailable; retry later"


class Refused(Exception):
    """A check refused its input; message says why in words the sender can act on.

    Not an answer by itself: whoever ran the check turns it into one (an upload's
    inspector refuses a package, and the endpoint answers 400 with the message).
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
