"""A small synchronous client for the service: unwraps the envelope, raises ApiError.

Success is `{"success": true, "data": ...}` and the client returns `data`; anything else
becomes `ApiError(status, code, message)`. A network failure is `ApiError(0,
"NETWORK_ERROR", ...)`, so callers can treat "the service could not take it" (status 0 or
5xx) apart from "the service refused it" (4xx).
"""

from __future__ import annotations

import enum
import hashlib
import importlib.metadata
import time
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import IO, Any

import httpx

from marketplace_client.errors import CliError
from marketplace_rules.vocabulary import PAT_PREFIX


def _package_version() -> str:
    try:
        return importlib.metadata.version("marketplace-client")
    except importlib.metadata.PackageNotFoundError:
        return "0"


CLI_VERSION = _package_version()
USER_AGENT = f"marketplace-cli/{CLI_VERSION}"
# Uploads and downloads can be large: the read/write timeouts apply per chunk, not in total.
DEFAULT_TIMEOUT = httpx.Timeout(60.0, connect=10.0)
DOWNLOAD_CHUNK = 64 * 1024
# 429 RATE_LIMIT_EXCEEDED carries Retry-After (seconds): a batch waits rather than fails.
RATE_LIMIT_RETRIES = 3
MAX_RETRY_AFTER_SECONDS = 60.0

FormFiles = Mapping[str, tuple[str, IO[bytes], str]]


class ApiError(CliError):
    """An error answered by the service (or a failure to reach it: status 0)."""

    # A refusal of a publishing token's scopes (token_refusal): not a matter of role.
    refused_token = False

    def __init__(
        self, status: int, code: str, message: str, details: dict[str, Any] | None = None
    ) -> None:
        super().__init__(code, message, details=details)
        self.status = status

    @property
    def server_side(self) -> bool:
        """The service could not take the request (network error, 5xx), rather than refused it."""
        return self.status == 0 or self.status >= 500

    def headline(self) -> str:
        if self.status:
            return f"{self.code}: {self.message} (HTTP {self.status})"
        return f"{self.code}: {self.message}"

    def to_json(self) -> dict[str, Any]:
        return {**super().to_json(), "status": self.status}


def unwrap(response: httpx.Response) -> Any:
    """The `data` of a success envelope, or the ApiError the response describes."""
    try:
        body: Any = response.json()
    except (ValueError, RecursionError):  # not JSON, or nested past Python's stack
        body = None
    status = response.status_code
    if response.is_success:
        if isinstance(body, dict) and body.get("success") is True and "data" in body:
            return body["data"]
        raise ApiError(status, "BAD_RESPONSE", "the service answered without its JSON envelope")
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        details = error.get("details")
        raise ApiError(
            status,
            str(error.get("code") or f"HTTP_{status}"),
            str(error.get("message") or response.reason_phrase),
            details if isinstance(details, dict) else None,
        )
    raise ApiError(status, f"HTTP_{status}", response.reason_phrase or "request failed")


_TOKEN_REFUSALS = {
    401: "the server refused the publishing token (expired, deleted or revoked)",
    403: "the publishing token does not allow this",
}
# What a 401 asks the user to do, by where the refused token came from.
RECOVER_PAT = (
    "create a new one (POST /api/v1/auth/tokens) and pass it with --token or MARKETPLACE_TOKEN"
)
RECOVER_LOGIN = "the stored login has expired or was revoked: run `marketplace login`"
RECOVER_GIVEN = "run `marketplace login`, or pass a new token with --token or MARKETPLACE_TOKEN"


class CredentialKind(enum.StrEnum):
    """Where the bearer token of a client came from (what a 401 should say to do)."""

    NONE = "none"
    LOGIN = "login"  # stored by `marketplace login`, renewed with its refresh token
    PUBLISHING_TOKEN = "publishing-token"  # noqa: S105 - a kind, not a secret
    ACCESS_TOKEN = "access-token"  # noqa: S105 - given with --token / MARKETPLACE_TOKEN


def credential_kind(token: str | None, *, from_login: bool = False) -> CredentialKind:
    if not token:
        return CredentialKind.NONE
    if token.startswith(PAT_PREFIX):
        return CredentialKind.PUBLISHING_TOKEN
    return CredentialKind.LOGIN if from_login else CredentialKind.ACCESS_TOKEN


def token_refusal(error: ApiError) -> ApiError:
    """A refusal of a publishing token, said as one: 401 means the token is dead, 403 that
    its scopes or plugin list do not reach the call (other errors are left as they are)."""
    lead = _TOKEN_REFUSALS.get(error.status)
    if lead is None or error.code not in ("UNAUTHORIZED", "FORBIDDEN"):
        return error
    message = f"{lead}: {error.message}"
    if error.status == 401:
        message += f"; {RECOVER_PAT}"
    refusal = ApiError(error.status, error.code, message, error.details)
    refusal.refused_token = True
    return refusal


def auth_refusal(error: ApiError, kind: CredentialKind) -> ApiError:
    """A 401 with the way to recover for this kind of credential; other errors unchanged."""
    if kind is CredentialKind.PUBLISHING_TOKEN:
        return token_refusal(error)
    if error.status != 401 or error.code != "UNAUTHORIZED":
        return error
    recovery = {
        CredentialKind.LOGIN: RECOVER_LOGIN,
        CredentialKind.ACCESS_TOKEN: RECOVER_GIVEN,
    }.get(kind)
    if recovery is None:
        return error  # no token was sent (a login's own refusal, say): nothing to renew
    return ApiError(error.status, error.code, f"{error.message}; {recovery}", error.details)


def retry_delay(response: httpx.Response) -> float | None:
    """Seconds to wait before repeating a rate-limited request; None when not rate-limited."""
    if response.status_code != 429:
        return None
    try:
        seconds = float(response.headers.get("Retry-After", "1"))
    except ValueError:  # an HTTP date: not sent by this service
        seconds = 1.0
    if not 0 <= seconds <= MAX_RETRY_AFTER_SECONDS:
        return None
    return seconds


def _network_error(exc: httpx.RequestError, url: str, service: str | None) -> ApiError:
    """`service`: the service's address when `url` is on it (None: a presigned download URL
    on another host, such as object storage). A body that cannot be decoded (a false
    Content-Encoding) is an answer that could not be read, not a crash."""
    reason = str(exc) or type(exc).__name__
    details = {"url": url, "service": service}
    if isinstance(exc, httpx.DecodingError):
        return ApiError(
            0, "BAD_RESPONSE", f"the answer of {url} cannot be decoded: {reason}", details
        )
    return ApiError(0, "NETWORK_ERROR", f"cannot reach {url}: {reason}", details)


# Given the token a 401 refused, a renewed one (or None): the stored login's refresh.
Refresher = Callable[[str], str | None]


class ApiClient:
    """The service at `backend`, with an optional bearer token.

    With a `refresher` (a stored login), a 401 renews the token once and repeats the request.
    """

    def __init__(
        self,
        backend: str,
        token: str | None = None,
        *,
        transport: httpx.BaseTransport | None = None,
        timeout: httpx.Timeout = DEFAULT_TIMEOUT,
        sleep: Callable[[float], None] = time.sleep,
        refresher: Refresher | None = None,
        from_login: bool = False,
        rate_limit_retries: int = RATE_LIMIT_RETRIES,
    ) -> None:
        self._sleep = sleep
        self._rate_limit_retries = rate_limit_retries
        self._refresher = refresher
        self.token = token
        headers = {"User-Agent": USER_AGENT, "Accept": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self.backend = backend
        self.credential = credential_kind(token, from_login=from_login)
        # A publishing token (`mkt_pat_...`) rather than a login's access token.
        self.uses_publishing_token = self.credential is CredentialKind.PUBLISHING_TOKEN
        self._http = httpx.Client(
            base_url=backend, headers=headers, transport=transport, timeout=timeout
        )
        # Presigned download URLs may point at another host (object storage): never send
        # them the bearer token.
        self._anonymous = httpx.Client(
            headers={"User-Agent": USER_AGENT},
            transport=transport,
            timeout=timeout,
            follow_redirects=True,
        )

    def __enter__(self) -> ApiClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()
        self._anonymous.close()

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str | int] | None = None,
        json: Any = None,
        data: Mapping[str, str] | None = None,
        files: FormFiles | None = None,
    ) -> Any:
        response = self._send(method, path, params=params, json=json, data=data, files=files)
        if response.status_code == 401 and self._renew_token():
            # httpx renders a file body again from position 0, so an upload can be repeated.
            response = self._send(method, path, params=params, json=json, data=data, files=files)
        try:
            return unwrap(response)
        except ApiError as exc:
            raise auth_refusal(exc, self.credential) from None

    def _send(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str | int] | None,
        json: Any,
        data: Mapping[str, str] | None,
        files: FormFiles | None,
    ) -> httpx.Response:
        for attempt in range(self._rate_limit_retries + 1):
            try:
                response = self._http.request(
                    method, path, params=params, json=json, data=data, files=files
                )
            except httpx.RequestError as exc:
                raise _network_error(exc, self.backend, self.backend) from exc
            delay = retry_delay(response)
            if delay is None or attempt == self._rate_limit_retries:
                break
            self._sleep(delay)
        return response

    def _renew_token(self) -> bool:
        """After a 401: ask the refresher for a new token; True when there is one (a long
        batch may outlive several access tokens, so this is once per request, not client)."""
        if self._refresher is None or self.token is None:
            return False
        renewed = self._refresher(self.token)
        if not renewed or renewed == self.token:
            return False
        self.token = renewed
        self._http.headers["Authorization"] = f"Bearer {renewed}"
        return True

    def get(self, path: str, *, params: Mapping[str, str | int] | None = None) -> Any:
        return self.request("GET", path, params=params)

    def post(
        self,
        path: str,
        *,
        json: Any = None,
        data: Mapping[str, str] | None = None,
        files: FormFiles | None = None,
    ) -> Any:
        return self.request("POST", path, json=json, data=data, files=files)

    def put(self, path: str, *, json: Any = None) -> Any:
        return self.request("PUT", path, json=json)

    def delete(self, path: str) -> Any:
        return self.request("DELETE", path)

    def absolute_url(self, url: str) -> str:
        """A download URL as given, or resolved against the backend when relative."""
        return str(httpx.URL(self.backend + "/").join(url))

    def download(
        self,
        url: str,
        sink: IO[bytes],
        *,
        max_bytes: int,
        on_progress: Callable[[int], None],
    ) -> tuple[str, int]:
        """Stream `url` into `sink`; return (sha256 hex, size). Stops past `max_bytes`."""
        target = self.absolute_url(url)
        digest = hashlib.sha256()
        size = 0
        try:
            with self._anonymous.stream("GET", target) as response:
                if not response.is_success:
                    response.read()
                    unwrap(response)
                for chunk in response.iter_bytes(DOWNLOAD_CHUNK):
                    size += len(chunk)
                    if size > max_bytes:
                        raise CliError(
                            "DOWNLOAD_TOO_LARGE",
                            f"the download is larger than the announced {max_bytes} bytes",
                        )
                    digest.update(chunk)
                    sink.write(chunk)
                    on_progress(size)
        except httpx.RequestError as exc:
            on_service = target.startswith(self.backend + "/")
            raise _network_error(exc, target, self.backend if on_service else None) from exc
        return digest.hexdigest(), size


def expect_object(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise CliError("BAD_RESPONSE", f"{what}: expected a JSON object")
    return value


def expect_list(value: Any, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise CliError("BAD_RESPONSE", f"{what}: expected a JSON array")
    return value


def expect_str(container: Mapping[str, Any], key: str, what: str) -> str:
    value = container.get(key)
    if not isinstance(value, str):
        raise CliError("BAD_RESPONSE", f"{what}: `{key}` missing or not a string")
    return value
