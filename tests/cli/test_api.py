from __future__ import annotations

import hashlib
import io

import httpx
import pytest

from marketplace_client.api import ApiClient, ApiError
from marketplace_client.errors import CliError

from .fake_api import FakeApi, envelope, error

BACKEND = "http://market.test"


def client(fake: FakeApi, token: str | None = "tok") -> ApiClient:  # noqa: S107
    return ApiClient(BACKEND, token, transport=fake.transport)


def test_success_envelope_returns_data(fake: FakeApi) -> None:
    fake.ok("GET", "/api/v1/thing", {"a": 1})
    with client(fake) as api:
        assert api.get("/api/v1/thing") == {"a": 1}
    assert fake.requests[0].headers["authorization"] == "Bearer tok"


def test_error_envelope_raises_api_error_with_code_and_message(fake: FakeApi) -> None:
    fake.on("GET", "/x", error(404, "PLUGIN_NOT_FOUND", "Plugin does not exist", {"id": "p"}))
    with client(fake) as api, pytest.raises(ApiError) as caught:
        api.get("/x")
    exc = caught.value
    assert (exc.status, exc.code, exc.message, exc.details) == (
        404,
        "PLUGIN_NOT_FOUND",
        "Plugin does not exist",
        {"id": "p"},
    )
    assert exc.headline() == "PLUGIN_NOT_FOUND: Plugin does not exist (HTTP 404)"
    assert not exc.server_side


def test_response_without_envelope_is_an_http_error(fake: FakeApi) -> None:
    fake.on("GET", "/x", httpx.Response(502, text="<html>Bad gateway</html>"))
    with client(fake) as api, pytest.raises(ApiError) as caught:
        api.get("/x")
    assert (caught.value.status, caught.value.code) == (502, "HTTP_502")
    assert caught.value.server_side


def test_success_status_without_envelope_is_a_bad_response(fake: FakeApi) -> None:
    fake.on("GET", "/x", httpx.Response(200, json={"items": []}))
    with client(fake) as api, pytest.raises(ApiError) as caught:
        api.get("/x")
    assert caught.value.code == "BAD_RESPONSE"


def test_network_failure_is_status_zero(fake: FakeApi) -> None:
    fake.on("GET", "/x", httpx.ConnectError("connection refused"))
    with client(fake) as api, pytest.raises(ApiError) as caught:
        api.get("/x")
    assert (caught.value.status, caught.value.code) == (0, "NETWORK_ERROR")
    assert caught.value.server_side
    assert "connection refused" in caught.value.message


def test_no_token_means_no_authorization_header(fake: FakeApi) -> None:
    fake.ok("GET", "/x", {})
    with client(fake, token=None) as api:
        api.get("/x")
    assert "authorization" not in fake.requests[0].headers


def test_download_streams_hashes_and_never_sends_the_token(fake: FakeApi) -> None:
    fake.on("GET", "/blobs/p.tar.gz", httpx.Response(200, content=b"package-bytes"))
    sink = io.BytesIO()
    seen: list[int] = []
    with client(fake) as api:
        digest, size = api.download("/blobs/p.tar.gz", sink, max_bytes=100, on_progress=seen.append)
    assert sink.getvalue() == b"package-bytes"
    assert size == 13
    assert seen[-1] == 13
    assert digest == hashlib.sha256(b"package-bytes").hexdigest()
    request = fake.requests[0]
    assert str(request.path) == "/blobs/p.tar.gz"
    assert "authorization" not in request.headers


def test_download_stops_past_the_announced_size(fake: FakeApi) -> None:
    fake.on("GET", "/big", httpx.Response(200, content=b"x" * 50))
    with client(fake) as api, pytest.raises(CliError, match="larger than the announced"):
        api.download("/big", io.BytesIO(), max_bytes=10, on_progress=lambda _n: None)


def test_download_error_status_is_an_api_error(fake: FakeApi) -> None:
    fake.on("GET", "/expired", error(403, "FORBIDDEN", "URL expired"))
    with client(fake) as api, pytest.raises(ApiError) as caught:
        api.download("/expired", io.BytesIO(), max_bytes=10, on_progress=lambda _n: None)
    assert caught.value.code == "FORBIDDEN"


def test_rate_limited_requests_wait_and_repeat(fake: FakeApi) -> None:
    limited = error(429, "RATE_LIMIT_EXCEEDED", "Too many requests")
    limited.headers["Retry-After"] = "2"
    fake.on("POST", "/x", limited, limited, envelope({"done": True}))
    waits: list[float] = []
    with ApiClient(BACKEND, "tok", transport=fake.transport, sleep=waits.append) as api:
        assert api.post("/x", json={"a": 1}) == {"done": True}
    assert waits == [2.0, 2.0]
    assert [r.json for r in fake.requests] == [{"a": 1}] * 3


def test_rate_limit_gives_up_after_the_retries_or_a_long_wait(fake: FakeApi) -> None:
    limited = error(429, "RATE_LIMIT_EXCEEDED", "Too many requests")
    fake.on("GET", "/x", limited)
    waits: list[float] = []
    with ApiClient(BACKEND, "tok", transport=fake.transport, sleep=waits.append) as api:
        with pytest.raises(ApiError) as caught:
            api.get("/x")
    assert caught.value.code == "RATE_LIMIT_EXCEEDED"
    assert waits == [1.0, 1.0, 1.0]
    long_wait = error(429, "RATE_LIMIT_EXCEEDED", "Too many requests")
    long_wait.headers["Retry-After"] = "3600"
    fake.on("GET", "/y", long_wait)
    with ApiClient(BACKEND, "tok", transport=fake.transport, sleep=waits.append) as api:
        with pytest.raises(ApiError):
            api.get("/y")
    assert len(waits) == 3


def test_a_body_that_cannot_be_decoded_is_an_api_error_not_a_crash() -> None:
    """A false Content-Encoding (a hostile or broken server) is one clear error."""

    def handler(_request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200, stream=httpx.ByteStream(b"not gzip"), headers={"Content-Encoding": "gzip"}
        )

    with ApiClient(BACKEND, None, transport=httpx.MockTransport(handler)) as api:
        with pytest.raises(ApiError) as caught:
            api.get("/api/v1/log/checkpoint")
    assert caught.value.code == "BAD_RESPONSE"
    assert "cannot be decoded" in caught.value.message
