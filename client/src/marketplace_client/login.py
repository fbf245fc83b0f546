"""`marketplace login`, `whoami` and `logout`: a login per backend in the config folder.

A login keeps the access token, its expiry and the refresh token (mode 0600); commands renew
the pair through `cli/session.py`. `logout` revokes the refresh token on the server.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from marketplace_client.api import (
    ApiClient,
    ApiError,
    CredentialKind,
    credential_kind,
    expect_object,
    expect_str,
)
from marketplace_client.config import CredentialStore, resolve_backend, resolve_credentials
from marketplace_client.context import Runtime, get_runtime
from marketplace_client.errors import CliError
from marketplace_client.options import BackendOption, JsonOption, TokenOption
from marketplace_client.output import Output, reporting_errors

ME_PATH = "/api/v1/auth/me"
LOGOUT_PATH = "/api/v1/auth/logout"


def _ask_email(email: str | None, runtime: Runtime) -> str:
    if email:
        return email
    if not runtime.is_interactive():
        raise CliError("BAD_OPTION", "--email is required when there is no terminal to ask")
    value: str = typer.prompt("E-mail")
    return value


def _ask_password(password_stdin: bool, runtime: Runtime) -> str:
    if password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
        if not password:
            raise CliError("BAD_OPTION", "--password-stdin: no password on standard input")
        return password
    if not runtime.is_interactive():
        raise CliError(
            "BAD_OPTION", "no terminal to ask the password: use --password-stdin in scripts"
        )
    value: str = typer.prompt("Password", hide_input=True)
    return value


def login_command(
    ctx: typer.Context,
    backend: BackendOption = None,
    email: Annotated[str | None, typer.Option("--email", help="Account e-mail.")] = None,
    password_stdin: Annotated[
        bool,
        typer.Option("--password-stdin", help="Read the password from standard input (scripts)."),
    ] = False,
    json_output: JsonOption = False,
) -> None:
    """Log in and store the login (access and refresh tokens, mode 0600) for later commands."""
    out = Output(json_mode=json_output)
    runtime = get_runtime(ctx)
    store = CredentialStore()
    with reporting_errors(out):
        url = resolve_backend(backend, store)
        address = _ask_email(email, runtime)
        password = _ask_password(password_stdin, runtime)
        with runtime.client(url, None) as api:
            data = expect_object(
                api.post("/api/v1/auth/login", json={"email": address, "password": password}),
                "login",
            )
        token = expect_str(data, "accessToken", "login")
        refresh = data.get("refreshToken")
        expires_in = data.get("expiresIn")
        user = data.get("user")
        role = user.get("role") if isinstance(user, dict) else None
        store.save(
            url,
            token,
            address,
            refresh_token=refresh if isinstance(refresh, str) else None,
            expires_in=expires_in if isinstance(expires_in, int) else None,
        )
    result = {"backend": url, "email": address, "role": role, "credentials": str(store.path)}
    out.result(
        result,
        lambda: out.out.print(
            f"Logged in to {url} as {address}"
            + (f" ({role})" if role else "")
            + f"; token saved in {store.path}",
            markup=False,
        ),
    )


def _revoke(runtime: Runtime, url: str, refresh_token: str | None) -> tuple[bool, str | None]:
    """Revoke the refresh token on the server: (revoked, why not). A token the server no
    longer knows (expired, already revoked) counts as revoked: it opens nothing."""
    if refresh_token is None:
        return False, "no refresh token was stored (a login from an older version)"
    try:
        with runtime.client(url, None) as api:
            api.post(LOGOUT_PATH, json={"refreshToken": refresh_token})
    except ApiError as exc:
        if exc.status == 401:
            return True, None
        return False, exc.headline()
    return True, None


def logout_command(
    ctx: typer.Context, backend: BackendOption = None, json_output: JsonOption = False
) -> None:
    """Revoke the stored login's refresh token on the server and forget the login.

    The local login is removed even when the server cannot be reached; the exit status is
    then 1, since the refresh token stays valid on the server until it expires.
    """
    out = Output(json_mode=json_output)
    runtime = get_runtime(ctx)
    store = CredentialStore()
    with reporting_errors(out):
        url = resolve_backend(backend, store)
        login = store.login_for(url)
        if login is None:
            message = f"No login was stored for {url}"
            out.result(
                {"backend": url, "removed": False, "revoked": False},
                lambda: out.out.print(message, markup=False),
            )
            return
        revoked, failure = _revoke(runtime, url, login.refresh_token)
        store.remove(url)
        file_removed = store.remove_if_empty()
    local = f"{store.path} removed" if file_removed else f"login removed from {store.path}"
    if revoked:
        message = f"Logged out of {url}: refresh token revoked on the server; {local}"
    else:
        message = f"Logged out of {url} on this machine only: {local}"
    result: dict[str, Any] = {
        "backend": url,
        "removed": True,
        "revoked": revoked,
        "credentials": str(store.path),
        "fileRemoved": file_removed,
    }
    if failure is not None:
        result["revokeError"] = failure
    if revoked or login.refresh_token is None:
        out.result(result, lambda: out.out.print(message, markup=False))
        if failure is not None:
            out.warn(failure)
        return
    # The server could not take it: the local part is done, the revocation is not.
    if not out.json_mode:
        out.out.print(message, markup=False)
    out.fail(
        CliError(
            "REVOKE_FAILED",
            f"the refresh token could not be revoked on the server ({failure}); it stays "
            "valid there until it expires",
            details=result,
        )
    )


def _describe_credential(kind: CredentialKind, store: CredentialStore, url: str) -> str:
    if kind is CredentialKind.PUBLISHING_TOKEN:
        return "publishing token (mkt_pat_...) from --token or MARKETPLACE_TOKEN"
    if kind is CredentialKind.ACCESS_TOKEN:
        return "access token from --token or MARKETPLACE_TOKEN (not renewed)"
    login = store.login_for(url)
    expiry = ""
    if login is not None and login.expires_at is not None:
        expiry = f", access token valid until {login.expires_at:%Y-%m-%dT%H:%M:%SZ}"
    renewal = "renewed automatically" if login and login.refresh_token else "not renewable"
    return f"login stored in {store.path}{expiry}, {renewal}"


def whoami_command(
    ctx: typer.Context,
    backend: BackendOption = None,
    token: TokenOption = None,
    json_output: JsonOption = False,
) -> None:
    """Show who the stored login or the given token acts as, on which backend."""
    out = Output(json_mode=json_output)
    runtime = get_runtime(ctx)
    store = CredentialStore()
    with reporting_errors(out):
        credentials = resolve_credentials(backend, token, store)
        credentials.require_token()
        kind = credential_kind(credentials.token, from_login=credentials.from_login)
        with runtime.client(credentials.backend, credentials.token) as api:
            user = _who(api, kind)
        described = _describe_credential(kind, store, credentials.backend)
    result: dict[str, Any] = {
        "backend": credentials.backend,
        "credential": kind.value,
        "user": user,
    }
    login = store.login_for(credentials.backend) if kind is CredentialKind.LOGIN else None
    if login is not None:
        result["credentials"] = str(store.path)
        result["expiresAt"] = (
            f"{login.expires_at:%Y-%m-%dT%H:%M:%SZ}" if login.expires_at is not None else None
        )

    def human() -> None:
        if user is None:
            out.out.print(
                f"A live publishing token on {credentials.backend} (the account behind it is "
                "not shown: account endpoints refuse publishing tokens)",
                markup=False,
            )
        else:
            who = f"{user.get('email')} ({user.get('role')})"
            out.out.print(f"{who} on {credentials.backend}", markup=False)
        out.out.print(f"Credential: {described}", markup=False)

    out.result(result, human)


def _who(api: ApiClient, kind: CredentialKind) -> dict[str, Any] | None:
    """The account behind the token; None for a live publishing token, which the service
    authenticates (else 401) before refusing it the account endpoints (403, CONTRACT 11)."""
    try:
        data = expect_object(api.get(ME_PATH), "me")
    except ApiError as exc:
        if kind is CredentialKind.PUBLISHING_TOKEN and exc.status == 403:
            return None
        raise
    return expect_object(data.get("user"), "me.user")


def register(app: typer.Typer) -> None:
    app.command("login")(login_command)
    app.command("whoami")(whoami_command)
    app.command("logout")(logout_command)
