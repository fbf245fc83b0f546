"""A recording stand-in for the service, served through httpx.MockTransport."""

from __future__ import annotations

import email.parser
import email.policy
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from marketplace_rules.versions import version_sort_key

Handler = Callable[[httpx.Request], httpx.Response]


def envelope(data: Any, status: int = 200) -> httpx.Response:
    return httpx.Response(status, json={"success": True, "data": data})


def error(status: int, code: str, message: str = "", details: Any = None) -> httpx.Response:
    body = {"code": code, "message": message or code, "details": details or {}}
    return httpx.Response(status, json={"success": False, "error": body})


@dataclass
class FilePart:
    filename: str
    content: bytes
    content_type: str


@dataclass
class Recorded:
    method: str
    path: str
    params: dict[str, str]
    headers: httpx.Headers
    body: bytes
    json: Any = None
    form: dict[str, str] = field(default_factory=dict)
    files: dict[str, FilePart] = field(default_factory=dict)


def parse_multipart(content_type: str, body: bytes) -> tuple[dict[str, str], dict[str, FilePart]]:
    raw = f"Content-Type: {content_type}\r\n\r\n".encode() + body
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(raw)
    form: dict[str, str] = {}
    files: dict[str, FilePart] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        filename = part.get_filename()
        if filename is None:
            form[str(name)] = payload.decode()
        else:
            files[str(name)] = FilePart(filename, payload, part.get_content_type())
    return form, files


def record(request: httpx.Request) -> Recorded:
    body = request.read()
    recorded = Recorded(
        request.method, request.url.path, dict(request.url.params), request.headers, body
    )
    content_type = request.headers.get("content-type", "")
    if content_type.startswith("application/json"):
        recorded.json = json.loads(body)
    elif content_type.startswith("multipart/form-data"):
        recorded.form, recorded.files = parse_multipart(content_type, body)
    return recorded


UPDATES_PATH = "/api/v1/plugins/updates"
UPDATE_CHECK_FIELDS = {"installId", "channel", "items"}
CHANNELS = ("stable", "prerelease")


def update_check_problem(body: Any) -> str | None:
    """What the service would refuse in an update check's body (CONTRACT 16), or None."""
    if not isinstance(body, dict) or set(body) - UPDATE_CHECK_FIELDS:
        return "unknown fields"
    install_id, items = body.get("installId"), body.get("items")
    if not isinstance(install_id, str) or not 8 <= len(install_id) <= 128:
        return "installId: 8-128 characters"
    if body.get("channel", "stable") not in CHANNELS:
        return "channel: stable or prerelease"
    if not isinstance(items, list) or len(items) > 500:
        return "items: at most 500"
    for item in items:
        if not isinstance(item, dict) or set(item) != {"pluginKey", "version"}:
            return "items: {pluginKey, version}"
    return None


@dataclass
class UpdateOffers:
    """The fake's POST /api/v1/plugins/updates: a plugin with a scripted offer gets it
    whatever its version; one with a latest version is offered it when it is newer than the
    install's; any other is not listed. `current` echoes the version sent."""

    latest: dict[str, str] = field(default_factory=dict)
    scripted: dict[str, tuple[str | None, str]] = field(default_factory=dict)

    def offer(self, key: str, version: str) -> dict[str, Any]:
        offered: str | None
        if key in self.scripted:
            offered, reason = self.scripted[key]
        elif key in self.latest:
            newer = version_sort_key(self.latest[key]) > version_sort_key(version)
            offered, reason = (self.latest[key], "update") if newer else (None, "up_to_date")
        else:
            offered, reason = None, "not_listed"
        return {"pluginKey": key, "current": version, "offered": offered, "reason": reason}

    def answer(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.read())
        problem = update_check_problem(body)
        if problem is not None:
            return error(400, "VALIDATION_FAILED", problem)
        items = [self.offer(item["pluginKey"], item["version"]) for item in body["items"]]
        return envelope({"items": items})


class FakeApi:
    """Routes by (method, path); a list of responses is served in order, the last repeating.

    The update check is answered from the start, as by a current service (`UpdateOffers`:
    a plugin given no offer is not listed, so a plain `install` downloads `latest` and the
    download route says what the service says); a test of an older service routes it to a
    404 itself."""

    def __init__(self) -> None:
        self.routes: dict[tuple[str, str], list[httpx.Response | Handler | Exception]] = {}
        self.requests: list[Recorded] = []
        self.offers = UpdateOffers()
        self.on("POST", UPDATES_PATH, self.offers.answer)

    def offer_latest(self, key: str, version: str) -> None:
        """The update check offers `version` of `key` to older installs."""
        self.offers.latest[key] = version

    def offer(self, key: str, offered: str | None, reason: str) -> None:
        """The update check answers this for `key`, whatever version is installed."""
        self.offers.scripted[key] = (offered, reason)

    def update_checks(self) -> list[Any]:
        """The bodies of the update checks received, in order."""
        return [r.json for r in self.requests if (r.method, r.path) == ("POST", UPDATES_PATH)]

    def on(self, method: str, path: str, *responses: httpx.Response | Handler | Exception) -> None:
        self.routes[(method, path)] = list(responses)

    def ok(self, method: str, path: str, data: Any, status: int = 200) -> None:
        self.on(method, path, envelope(data, status))

    def handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(record(request))
        queue = self.routes.get((request.method, request.url.path))
        if not queue:
            return error(404, "NOT_FOUND", f"no fake route for {request.method} {request.url.path}")
        answer = queue.pop(0) if len(queue) > 1 else queue[0]
        if isinstance(answer, Exception):
            raise answer
        if isinstance(answer, httpx.Response):
            # A Response can be served once; copy it so the last one can repeat.
            return httpx.Response(
                answer.status_code, headers=answer.headers, content=answer.content
            )
        return answer(request)

    @property
    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handle)

    def calls(self) -> list[tuple[str, str]]:
        return [(r.method, r.path) for r in self.requests]

    def find(self, method: str, path: str) -> Recorded:
        matches = [r for r in self.requests if r.method == method and r.path == path]
        assert len(matches) == 1, f"{method} {path} called {len(matches)} times: {self.calls()}"
        return matches[0]

    def writes(self) -> list[tuple[str, str]]:
        return [(r.method, r.path) for r in self.requests if r.method != "GET"]
