"""`marketplace login` and `marketplace logout`: keep a token per backend in the config folder."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from marketplace.cli.api import expect_object, expect_str
from marketplace.cli.config import CredentialStore, resolve_backend
from marketplace.cli.context import Runtime, get_runtime
from marketplace.cli.errors import CliError
from marketplace.cli.options import BackendOption, JsonOption
from marketplace.cli.output import Output, reporting_errors


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
    """Log in and store the access token (mode 0600) for later commands."""
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
        user = data.get("user")
        role = user.get("role") if isinstance(user, dict) else None
        store.save(url, token, address)
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


def logout_command(backend: BackendOption = None, json_output: JsonOption = False) -> None:
    """Forget the token stored for a backend."""
    out = Output(json_mode=json_output)
    store = CredentialStore()
    with reporting_errors(out):
        url = resolve_backend(backend, store)
        removed = store.remove(url)
    message = f"Logged out of {url}" if removed else f"No token was stored for {url}"
    out.result({"backend": url, "removed": removed}, lambda: out.out.print(message, markup=False))


def register(app: typer.Typer) -> None:
    app.command("login")(login_command)
    app.command("logout")(logout_command)
