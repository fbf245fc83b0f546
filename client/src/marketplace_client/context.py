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

from marketplace_client.api import ApiClient, Refresher
from marketplace_client.config import CredentialStore
from marketplace_client.errors import CliError
from marketplace_client.session import LoginRefresher
from marketplace_rules.vocabulary import PAT_PREFIX


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
        """A client for `backend`; when `token` is the login stored for it, the client
        renews it (before starting when near its expiry, and on a 401)."""
        refresher: Refresher | None = None
        from_login = False
        if token and not token.startswith(PAT_PREFIX):
            store = CredentialStore()
            try:
                login = store.login_for(backend)
            except CliError:
                login = None  # an unreadable file does not stop an explicit --token
            if login is not None and login.token == token:
                from_login = True
                if login.refresh_token is not None:
                    renewer = LoginRefresher(store, backend, self.transport)
                    token = renewer.fresh_token(token)
                    refresher = renewer.after_refusal
        return ApiClient(
            backend, token, transport=self.transport, refresher=refresher, from_login=from_login
        )


def get_runtime(ctx: typer.Context) -> Runtime:
    found = ctx.find_object(Runtime)
    return found if found is not None else Runtime()
