"""What an error says to do next (CONTRACT 18), for every command in one place.

An error that concerns one plugin names it (`PLUGIN_NOT_FOUND: no plugin "weathr"`), and an
error the user can do something about ends with that step. The service's answers are
explained here when they are printed (`Output.error`, and the per-plugin summaries of
`update` and `publish-batch`), from the error's own details (`pluginKey`, `requiredRole`
when the service sends them) and what the command knows (`Subject`: the plugin key it was
given, the role its calls need). Errors the tool makes itself already say what to do.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from marketplace_client.api import ApiError
from marketplace_client.config import plugins_dir
from marketplace_client.errors import CliError

# Roles in rank order: a role allows what every role before it allows.
ROLES = ("USER", "DEVELOPER", "ADMIN", "SUPER_ADMIN")
ADMIN_ROLE = "ADMIN"


@dataclass(frozen=True)
class Subject:
    """What a command is about, for the errors it prints."""

    plugin_key: str | None = None  # the PLUGIN_KEY (or id) the command was given
    required_role: str | None = None  # the least role its calls need (review: ADMIN)
    find_hint: str | None = None  # how to find the plugin when the service has none


NO_SUBJECT = Subject()


def explain(error: CliError, subject: Subject = NO_SUBJECT) -> CliError:
    """`error` with the item named and the next step added; unchanged when there is none."""
    if getattr(error, "explained", False):
        return error
    message = _explained_message(error, subject)
    if message is None:
        return error
    explained = error.with_message(message)
    explained.explained = True
    return explained


def _explained_message(error: CliError, subject: Subject) -> str | None:
    if error.code == "NOT_INSTALLED":
        return _not_installed(error)
    if not isinstance(error, ApiError):
        return None  # the tool's own errors already name things and say what to do
    if error.code == "NETWORK_ERROR" and error.status == 0:
        return _network(error)
    key = _plugin_key(error.details) or subject.plugin_key
    if error.code == "PLUGIN_NOT_FOUND" and error.status == 404:
        return _not_found(error, key, subject)
    if error.code == "PLUGIN_NOT_OWNED" and error.status == 403:
        return _not_owned(error, key)
    if error.code == "FORBIDDEN" and error.status == 403 and not error.refused_token:
        return _forbidden(error, subject)
    return None


def _plugin_key(details: dict[str, Any]) -> str | None:
    key = details.get("pluginKey")
    return key if isinstance(key, str) and key else None


def _not_found(error: ApiError, key: str | None, subject: Subject) -> str:
    if key is None:
        return f"{error.message}; `marketplace search` lists the plugins on the service"
    hint = subject.find_hint or f"look for it with `marketplace search {key}`"
    return f'no plugin "{key}"; {hint}'


def _not_owned(error: ApiError, key: str | None) -> str:
    what = f'plugin "{key}"' if key else "the plugin"
    return (
        f"{what} belongs to another developer; log in as its owner to change it, or publish "
        'yours under another pluginKey (the "id" in manifest.json)'
    )


def roles_from(role: str) -> str:
    """`ADMIN` -> `ADMIN or SUPER_ADMIN`: the role and every role above it."""
    if role not in ROLES:
        return role
    allowed = list(ROLES[ROLES.index(role) :])
    if len(allowed) == 1:
        return allowed[0]
    return f"{', '.join(allowed[:-1])} or {allowed[-1]}"


def _forbidden(error: ApiError, subject: Subject) -> str:
    given = error.details.get("requiredRole")
    role = given if isinstance(given, str) and given else subject.required_role
    if role is None:
        return (
            f"{error.message}; your account's role does not allow this (`marketplace whoami` "
            "shows the role)"
        )
    message = error.message
    if role not in message:
        message += f"; this needs the {roles_from(role)} role"
    if role in ("ADMIN", "SUPER_ADMIN"):
        step = (
            "log in as an administrator (`marketplace login`) or pass an administrator's "
            "token with --token or MARKETPLACE_TOKEN"
        )
    else:
        step = f"log in with an account of the {roles_from(role)} role (`marketplace login`)"
    return f"{message}; {step}"


def _network(error: ApiError) -> str | None:
    if "url" not in error.details:
        return None
    service = error.details.get("service")
    if not isinstance(service, str):
        return f"{error.message}; the storage serving the download did not answer: try again later"
    return (
        f"{error.message}; is the service running at {service}? Start it with `marketplace "
        "serve` (`make run` in a checkout), or point --backend or MARKETPLACE_BACKEND at "
        "the service"
    )


def _not_installed(error: CliError) -> str | None:
    folder = error.details.get("dir")
    if not isinstance(folder, str):
        return None
    default = plugins_dir().resolve()
    if Path(folder) != default:  # given with --dir
        return (
            f"{error.message}; `marketplace list --dir {folder}` shows what is installed "
            f"there (without --dir the tool looks in {default})"
        )
    if os.environ.get("MARKETPLACE_PLUGINS_DIR"):
        return (
            f"{error.message} (MARKETPLACE_PLUGINS_DIR); pass --dir with the folder it was "
            "installed in, or change MARKETPLACE_PLUGINS_DIR"
        )
    return (
        f"{error.message} (the default install folder); pass --dir with the folder it was "
        "installed in, or set MARKETPLACE_PLUGINS_DIR"
    )
