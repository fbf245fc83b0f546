"""Errors name the item they concern and say what to do next (CONTRACT 18, issue 23)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from .fake_api import FakeApi, error
from .helpers import BACKEND, Invoke, as_developer, make_plugin, stdout_json

DOWNLOAD = "/api/v1/plugins/download/weathr/latest"
DEV = "/api/v1/developer/plugins"
PENDING_PLUGINS = "/api/v1/admin/plugins"


def test_plugin_not_found_names_the_key_given_and_suggests_a_search(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    fake.on("GET", DOWNLOAD, error(404, "PLUGIN_NOT_FOUND", "Plugin does not exist"))
    result = invoke(["install", "weathr", "--dir", str(tmp_path)])
    assert result.exit_code == 1
    assert result.stderr.strip() == (
        'error: PLUGIN_NOT_FOUND: no plugin "weathr"; look for it with `marketplace search '
        "weathr` (HTTP 404)"
    )


def test_plugin_not_found_prefers_the_key_the_service_names(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    details = {"pluginKey": "weathr"}
    fake.on("GET", DOWNLOAD, error(404, "PLUGIN_NOT_FOUND", "No plugin weathr", details))
    result = invoke(["install", "weathr", "--dir", str(tmp_path), "--json"])
    assert result.exit_code == 1
    document = stdout_json(result)["error"]
    assert document["message"].startswith('no plugin "weathr"; look for it with')
    assert document["details"] == details


def test_plugin_not_owned_names_the_plugin_and_what_to_do(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    directory = make_plugin(tmp_path)
    as_developer(fake)
    fake.on("GET", f"{DEV}/demo-plugin", error(403, "PLUGIN_NOT_OWNED", "Not your plugin"))
    result = invoke(["publish", str(directory)])
    assert result.exit_code == 1
    assert result.stderr.strip() == (
        'error: PLUGIN_NOT_OWNED: plugin "demo-plugin" belongs to another developer; log in '
        'as its owner to change it, or publish yours under another pluginKey (the "id" in '
        "manifest.json) (HTTP 403)"
    )
    assert fake.writes() == []


def test_a_batch_row_names_the_plugin_another_developer_owns(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    make_plugin(tmp_path, "theirs")
    as_developer(fake)
    fake.on("GET", f"{DEV}/theirs", error(403, "PLUGIN_NOT_OWNED", "Not your plugin"))
    result = invoke(["publish-batch", str(tmp_path), "--json"])
    assert result.exit_code == 1
    [row] = stdout_json(result)["data"]["results"]
    assert row["detail"].startswith(
        'PLUGIN_NOT_OWNED: plugin "theirs" belongs to another developer;'
    )


def test_not_installed_in_the_default_folder_says_which_and_how_to_point_elsewhere(
    tmp_path: Path, invoke: Invoke
) -> None:
    default = tmp_path / "home" / ".local" / "share" / "marketplace" / "plugins"
    result = invoke(["uninstall", "weather"], auth=False)
    assert result.exit_code == 1
    assert result.stderr.strip() == (
        f"error: NOT_INSTALLED: weather is not installed in {default} (the default install "
        "folder); pass --dir with the folder it was installed in, or set "
        "MARKETPLACE_PLUGINS_DIR"
    )


def test_not_installed_in_the_folder_of_the_setting_names_the_setting(
    tmp_path: Path, invoke: Invoke
) -> None:
    folder = tmp_path / "installed"
    result = invoke(
        ["uninstall", "weather"], auth=False, env={"MARKETPLACE_PLUGINS_DIR": str(folder)}
    )
    assert result.exit_code == 1
    assert result.stderr.strip() == (
        f"error: NOT_INSTALLED: weather is not installed in {folder} "
        "(MARKETPLACE_PLUGINS_DIR); pass --dir with the folder it was installed in, or change "
        "MARKETPLACE_PLUGINS_DIR"
    )


def test_not_installed_in_a_folder_given_with_dir_names_the_default_too(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    default = tmp_path / "home" / ".local" / "share" / "marketplace" / "plugins"
    result = invoke(["update", "weather", "--dir", str(tmp_path)])
    assert result.exit_code == 1
    assert result.stderr.strip() == (
        f"error: NOT_INSTALLED: weather is not installed in {tmp_path}; `marketplace list "
        f"--dir {tmp_path}` shows what is installed there (without --dir the tool looks in "
        f"{default})"
    )
    assert fake.calls() == []


def test_a_bare_forbidden_on_review_list_names_the_role_and_the_way_out(
    fake: FakeApi, invoke: Invoke
) -> None:
    fake.on("GET", PENDING_PLUGINS, error(403, "FORBIDDEN", "Forbidden"))
    result = invoke(["review", "list"])
    assert result.exit_code == 1
    assert result.stderr.strip() == (
        "error: FORBIDDEN: Forbidden; this needs the ADMIN or SUPER_ADMIN role; log in as an "
        "administrator (`marketplace login`) or pass an administrator's token with --token or "
        "MARKETPLACE_TOKEN (HTTP 403)"
    )


def test_a_forbidden_naming_its_role_is_not_told_twice(fake: FakeApi, invoke: Invoke) -> None:
    message = "This needs the ADMIN role (or SUPER_ADMIN); you are DEVELOPER"
    refusal = error(403, "FORBIDDEN", message, {"requiredRole": "ADMIN"})
    fake.on("GET", PENDING_PLUGINS, refusal)
    result = invoke(["review", "list"])
    assert result.stderr.strip() == (
        f"error: FORBIDDEN: {message}; log in as an administrator (`marketplace login`) or "
        "pass an administrator's token with --token or MARKETPLACE_TOKEN (HTTP 403)"
    )


def test_a_forbidden_of_an_unknown_role_points_at_whoami(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    fake.on("GET", DOWNLOAD, error(403, "FORBIDDEN", "Forbidden"))
    result = invoke(["install", "weathr", "--dir", str(tmp_path)])
    assert result.stderr.strip() == (
        "error: FORBIDDEN: Forbidden; your account's role does not allow this (`marketplace "
        "whoami` shows the role) (HTTP 403)"
    )


def test_a_network_error_asks_whether_the_service_runs_at_that_url(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    fake.on("GET", DOWNLOAD, httpx.ConnectError("[Errno 111] Connection refused"))
    result = invoke(["install", "weathr", "--dir", str(tmp_path), "--json"])
    assert result.exit_code == 1
    assert result.stderr.strip() == (
        f"error: NETWORK_ERROR: cannot reach {BACKEND}: [Errno 111] Connection refused; is the "
        f"service running at {BACKEND}? Start it with `marketplace serve` (`make run` in a "
        "checkout), or point --backend or MARKETPLACE_BACKEND at the service"
    )
    assert stdout_json(result)["error"]["details"] == {"url": BACKEND, "service": BACKEND}


@pytest.mark.parametrize(
    "args",
    [
        ["review", "list", "--kind", "everything"],
        ["search", "weather", "--sort", "best"],
    ],
    ids=["review-kind", "search-sort"],
)
def test_invalid_option_values_carry_no_pydantic_prefix(invoke: Invoke, args: list[str]) -> None:
    result = invoke([*args, "--backend", BACKEND], auth=False)
    assert result.exit_code == 2
    assert "Invalid value for" in result.output
    assert "Value error" not in result.output
    assert "is not one of" in result.output


def test_errors_in_json_carry_the_next_step_too(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    fake.on("GET", DOWNLOAD, error(404, "PLUGIN_NOT_FOUND", "Plugin does not exist"))
    result = invoke(["install", "weathr", "--dir", str(tmp_path), "--json"])
    document = json.loads(result.stdout)
    assert document["error"]["code"] == "PLUGIN_NOT_FOUND"
    assert document["error"]["message"] == (
        'no plugin "weathr"; look for it with `marketplace search weathr`'
    )
