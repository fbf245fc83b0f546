"""What a command needs from its surroundings, replaceable in tests.

Tests pass `obj=Runtime(transport=httpx.MockTransport(...))` to `CliRunner.invoke`; the
end-to-end tests use the default (a real network transport) and point `--backend` at a
running server.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import httpx
import typer

from marketplace.cli.api import ApiClient


@dataclass
class Runtime:
    transport: httpx.BaseTransport | None = None
    # None means "ask sys.stdin"; tests force a value to exercise prompts.
    interactive: bool | None = None
    mcp_timeout: float = 10.0

    def is_interactive(self) -> bool:
        if self.interactive is not None:
            return self.interactive
        return sys.stdin.isatty()

    def client(self, backend: str, token: str | None) -> ApiClient:
        return ApiClient(backend, token, transport=self.transport)


def get_runtime(ctx: typer.Context) -> Runtime:
    found = ctx.find_object(Runtime)
    return found if found is not None else Runtime()
