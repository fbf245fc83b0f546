"""A recording stand-in for the service, served through httpx.MockTransport."""

from __future__ import annotations

import email.parser
import email.policy
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

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


class FakeApi:
    """Routes by (method, path); a list of responses is served in order, the last repeating."""

    def __init__(self) -> None:
        self.routes: dict[tuple[str, str], list[httpx.Response | Handler | Exception]] = {}
        self.requests: list[Recorded] = []

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
