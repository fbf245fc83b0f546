"""Logins that last: renew the stored access token with the stored refresh token.

The service's access token lives an hour (ACCESS_TOKEN_MINUTES), its refresh token a month,
and each refresh rotates the pair (the old refresh token stops working). A command that uses
the stored login refreshes before it starts when the access token is within
`REFRESH_MARGIN` of its expiry, and once more on a 401, then repeats the refused request.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx

from marketplace_client.api import ApiClient, ApiError, expect_object, expect_str
from marketplace_client.config import CredentialStore, StoredLogin

REFRESH_PATH = "/api/v1/auth/refresh"
# Refresh this long before the expiry, so that a request (or an upload's first bytes) does
# not reach the server with a token that dies on the way.
REFRESH_MARGIN = timedelta(seconds=60)


def near_expiry(login: StoredLogin, now: datetime | None = None) -> bool:
    if login.expires_at is None:
        return False  # a file from an older version: the first 401 refreshes
    return login.expires_at - (now or datetime.now(UTC)) <= REFRESH_MARGIN


class LoginRefresher:
    """Refreshes the login stored for one backend; one refresh at a time across processes."""

    def __init__(
        self, store: CredentialStore, backend: str, transport: httpx.BaseTransport | None
    ) -> None:
        self.store = store
        self.backend = backend
        self.transport = transport
        # Set once the server refused the refresh token: do not ask again in this command.
        self.dead = False
        # The account the command started as: a login saved meanwhile for another account
        # is never adopted mid-command.
        self.email: str | None = None

    def fresh_token(self, token: str) -> str:
        """The token to start with: `token`, or a renewed one when it is near its expiry."""
        login = self.store.login_for(self.backend)
        if login is not None and login.token == token:
            self.email = login.email
        if login is None or login.token != token or not near_expiry(login):
            return token
        try:
            return self.after_refusal(token) or token
        except ApiError as exc:
            if exc.server_side:
                return token  # maybe still valid; the request itself says what is wrong
            raise

    def after_refusal(self, rejected: str) -> str | None:
        """A new access token after `rejected` was refused (or is about to expire); None
        when the login cannot be renewed (no refresh token, or the server refused it)."""
        if self.dead:
            return None
        with self.store.locked():
            login = self.store.login_for(self.backend)
            if login is None or login.refresh_token is None:
                return None
            if self.email is not None and login.email != self.email:
                return None  # someone logged in as another account meanwhile
            if login.token != rejected and not near_expiry(login):
                return login.token  # another command refreshed meanwhile
            try:
                with ApiClient(self.backend, None, transport=self.transport) as api:
                    data = expect_object(
                        api.post(REFRESH_PATH, json={"refreshToken": login.refresh_token}),
                        "refresh",
                    )
            except ApiError as exc:
                if exc.status == 401:
                    self.dead = True
                    return None
                raise
            token = expect_str(data, "accessToken", "refresh")
            refresh = expect_str(data, "refreshToken", "refresh")
            expires_in = data.get("expiresIn")
            self.store.rotate(
                self.backend,
                login.refresh_token,
                token,
                refresh,
                expires_in if isinstance(expires_in, int) else 0,
            )
            return token
