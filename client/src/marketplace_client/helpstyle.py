"""Readable help and usage errors, set in one place by the root group.

Value names (metavars) derived from each parameter:
Typer prints a parameter's Python type as its value name (`<str>`, `<list[str]>`, and
`<bool>` even for flags that take no value). The root group walks every command once it is
built and names each value the way Unix tools do: flags show none, other options and
arguments their name in capitals (`--backend BACKEND`, `PLUGIN_KEY`), and choices keep
their list. A metavar given by hand (`typer.Option(metavar=...)`) wins.

Usage errors: Typer checks some values with pydantic and passes on its message, whose
"Value error, " prefix means nothing to the user (`Invalid value for '--kind': Value
error, 'foo' is not one of ...`); the root group removes it from every usage error.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import typer.core
from typer import _click

# What pydantic puts before the message of a ValueError raised by a validator.
PYDANTIC_PREFIX = "Value error, "


class _NamedArgument(typer.core.TyperArgument):
    """An argument whose name column already says what it is: no `<str>` beside it."""

    def display_type_rich(self, ctx: _click.Context) -> str | None:
        return None


def _value_name(param: Any) -> str:
    """`--dir` -> DIR, `--forwarded-allow-ips` -> FORWARDED_ALLOW_IPS, `plugin_key` ->
    PLUGIN_KEY: the name the user types, not the Python parameter's."""
    longs = [opt for opt in param.opts if opt.startswith("--")]
    name = longs[0][2:] if longs else (param.name or "value")
    return name.replace("-", "_").upper()


def _readable(param: Any) -> None:
    if isinstance(param, typer.core.TyperArgument) and type(param) is typer.core.TyperArgument:
        param.__class__ = _NamedArgument  # same fields, one method changed
    if param.metavar is not None:
        return
    if getattr(param, "is_flag", False) or getattr(param, "count", False):
        param.metavar = ""  # a flag takes no value: nothing to name
        return
    descriptor = getattr(param, "type_descriptor", None)
    if descriptor is not None and descriptor.is_choice:
        return  # Typer lists the choices (`<critical|error|...>`): already readable
    param.metavar = _value_name(param)


def _walk(command: Any) -> None:
    for param in command.params:
        _readable(param)
    # The help option is made on demand and cached by the command; ask for it once here.
    help_option = command.get_help_option(_click.Context(command))
    if help_option is not None:
        _readable(help_option)
    for sub in getattr(command, "commands", {}).values():
        _walk(sub)


@contextmanager
def _plain_usage_errors() -> Iterator[None]:
    try:
        yield
    except _click.exceptions.UsageError as exc:
        exc.message = exc.message.removeprefix(PYDANTIC_PREFIX)
        raise


class ReadableGroup(typer.core.TyperGroup):
    """The root group: sets readable value names on every command below it, and words
    the usage errors of all of them."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _walk(self)

    def get_params(self, ctx: _click.Context) -> list[Any]:
        # Typer appends --install-completion and --show-completion after the group is built.
        params = super().get_params(ctx)
        for param in params:
            _readable(param)
        return params

    def make_context(self, *args: Any, **kwargs: Any) -> _click.Context:
        with _plain_usage_errors():
            return super().make_context(*args, **kwargs)

    def invoke(self, ctx: _click.Context) -> Any:
        # The subcommands parse their options inside the root's invoke.
        with _plain_usage_errors():
            return super().invoke(ctx)
