"""The CLI against the real app in the test: a synchronous httpx transport that hands each
request to the app's event loop (the CLI runs in a worker thread meanwhile)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

import httpx
from typer.testing import CliRunner, Result

from marketplace_client.context import Runtime
from marketplace_client.main import app as cli_app

BACKEND = "http://test"

Tamper = Callable[[httpx.Request, httpx.Response], httpx.Response]


class AppBridge(httpx.BaseTransport):
    def __init__(
        self, client: httpx.AsyncClient, loop: asyncio.AbstractEventLoop, tamper: Tamper | None
    ) -> None:
        self.client = client
        self.loop = loop
        self.tamper = tamper
        self.paths: list[tuple[str, str]] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.paths.append((request.method, request.url.path))
        content = request.read()
        call = self.client.request(
            request.method, str(request.url), headers=request.headers, content=content
        )
        answer = asyncio.run_coroutine_threadsafe(call, self.loop).result(timeout=60)
        response = httpx.Response(
            answer.status_code, headers=answer.headers, content=answer.content
        )
        return self.tamper(request, response) if self.tamper else response


async def run_cli(
    client: httpx.AsyncClient, args: Sequence[str], *, tamper: Tamper | None = None
) -> tuple[Result, AppBridge]:
    bridge = AppBridge(client, asyncio.get_running_loop(), tamper)
    runtime = Runtime(transport=bridge, interactive=False)

    def invoke() -> Result:
        return CliRunner().invoke(cli_app, [*args, "--backend", BACKEND], obj=runtime)

    return await asyncio.to_thread(invoke), bridge
