"""`marketplace search` and `marketplace info`: the public catalogue, without a login."""

from __future__ import annotations

from typing import Any

from .fake_api import FakeApi, error
from .helpers import BACKEND, Invoke, stdout_json

BROWSE = "/api/v1/plugins/browse"
DETAIL = "/api/v1/plugins/detail/hello-weather"
VERSIONS = "/api/v1/plugins/versions/hello-weather"
CAPABILITIES = "/api/v1/plugins/capabilities/hello-weather/latest"


def public_plugin(key: str = "hello-weather", **changes: Any) -> dict[str, Any]:
    plugin = {
        "id": f"id-{key}",
        "pluginKey": key,
        "name": "Hello Weather",
        "description": "Tells the weather over MCP",
        "type": "mcp",
        "category": "utility",
        "isFree": True,
        "price": 0,
        "validityDays": None,
        "tags": ["weather"],
        "license": "MIT",
        "homepage": None,
        "repository": None,
        "platforms": [],
        "latestVersion": "1.1.0",
        "downloadCount": 42,
        "ratingAverage": 4.5,
        "ratingCount": 2,
        "developer": {"id": "dev-1", "name": "Dev"},
    }
    plugin.update(changes)
    return plugin


def page(*items: dict[str, Any], total: int | None = None) -> dict[str, Any]:
    count = len(items) if total is None else total
    return {"items": list(items), "total": count, "page": 1, "pageSize": 20}


def public(*args: str) -> list[str]:
    """Public reads: the backend only, no token."""
    return [*args, "--backend", BACKEND]


def test_search_prints_key_name_version_rating_and_downloads(fake: FakeApi, invoke: Invoke) -> None:
    fake.ok("GET", BROWSE, page(public_plugin(), public_plugin("rain", name="Rain", ratingCount=0)))
    result = invoke(public("search", "weather"), auth=False)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "PLUGIN         NAME           VERSION  RATING   DOWNLOADS",
        "hello-weather  Hello Weather  1.1.0    4.5 (2)  42",
        "rain           Rain           1.1.0    -        42",
    ]
    assert "1-2 of 2." in result.stderr
    request = fake.find("GET", BROWSE)
    assert request.params == {"q": "weather", "sort": "popular", "page": "1", "pageSize": "20"}
    assert "authorization" not in request.headers


def test_search_passes_its_filters_and_sort(fake: FakeApi, invoke: Invoke) -> None:
    fake.ok("GET", BROWSE, page(public_plugin()))
    args = ["search", "w", "--category", "utility", "--type", "mcp", "--sort", "rating"]
    result = invoke(public(*args, "--page", "2"), auth=False)
    assert result.exit_code == 0, result.output
    assert fake.find("GET", BROWSE).params == {
        "q": "w",
        "category": "utility",
        "type": "mcp",
        "sort": "rating",
        "page": "2",
        "pageSize": "20",
    }


def test_search_with_no_match_says_so_plainly(fake: FakeApi, invoke: Invoke) -> None:
    fake.ok("GET", BROWSE, page())
    result = invoke(public("search", "weathr", "--type", "mcp"), auth=False)
    assert result.exit_code == 0
    assert result.stdout.strip() == f'No plugin matches "weathr" and type mcp on {BACKEND}.'


def test_search_refuses_an_unknown_type_before_asking(fake: FakeApi, invoke: Invoke) -> None:
    result = invoke(public("search", "--type", "gadget"), auth=False)
    assert result.exit_code == 2
    assert "must be one of mcp, tool" in result.output
    assert fake.calls() == []


def test_search_json_is_the_browse_page(fake: FakeApi, invoke: Invoke) -> None:
    fake.ok("GET", BROWSE, page(public_plugin(), total=21))
    result = invoke(public("search", "--json"), auth=False)
    document = stdout_json(result)
    assert document["success"] is True
    assert document["data"]["total"] == 21
    assert document["data"]["items"][0]["pluginKey"] == "hello-weather"


def test_info_prints_detail_versions_and_says_tools_are_not_inspected(
    fake: FakeApi, invoke: Invoke
) -> None:
    fake.ok("GET", DETAIL, public_plugin())
    versions = [
        {"version": "1.1.0", "isLatest": True, "createdAt": "2026-11-20T08:00:00Z",
         "changelog": "Rain too\nand more"},
        {"version": "1.0.0", "isLatest": False, "createdAt": "2026-11-01T08:00:00Z",
         "changelog": None},
    ]  # fmt: skip
    fake.ok("GET", VERSIONS, {"items": versions})
    # A service without inspection (CONTRACT 13) has no such route.
    fake.on("GET", CAPABILITIES, error(404, "NOT_FOUND", "Not Found"))
    result = invoke(public("info", "hello-weather"), auth=False)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "hello-weather: Hello Weather"
    assert "Developer:  Dev" in lines
    assert "Current:    1.1.0" in lines
    assert "Rating:     4.5 (2) ratings" in lines
    assert "Versions: 2" in lines
    assert "  1.1.0  2026-11-20  current  Rain too" in lines
    assert "  1.0.0  2026-11-01" in lines
    assert "Tools: not inspected yet" in lines
    assert lines[-1] == "Install: marketplace install hello-weather"


def test_info_lists_the_tools_inspection_found(fake: FakeApi, invoke: Invoke) -> None:
    fake.ok("GET", DETAIL, public_plugin())
    fake.ok("GET", VERSIONS, {"items": []})
    capabilities = {
        "pluginKey": "hello-weather",
        "version": "1.1.0",
        "status": "done",
        "server": {"name": "weather", "version": "1.1.0", "instructions": None},
        "tools": [
            {"name": "forecast", "description": "Tomorrow's weather", "fingerprint": "ab"},
            {"name": "now", "description": "The weather now", "fingerprint": "cd"},
        ],
        "prompts": [],
        "declared": ["network:api.weather.example"],
        "observed": {"network": [], "filesWritten": [], "processes": [], "sensitiveReads": []},
        "undeclared": ["fs.write"],
    }
    fake.ok("GET", CAPABILITIES, capabilities)
    result = invoke(public("info", "hello-weather"), auth=False)
    lines = result.stdout.splitlines()
    start = lines.index("Tools: 2")
    assert lines[start + 1 : start + 3] == [
        "  forecast  Tomorrow's weather",
        "  now       The weather now",
    ]
    assert "Prompts: none" in lines
    assert "Permissions declared: network:api.weather.example" in lines
    assert "Observed but not declared: fs.write" in lines


def test_info_while_inspection_is_queued(fake: FakeApi, invoke: Invoke) -> None:
    fake.ok("GET", DETAIL, public_plugin())
    fake.ok("GET", VERSIONS, {"items": []})
    fake.ok("GET", CAPABILITIES, {"status": "queued", "tools": []})
    result = invoke(public("info", "hello-weather"), auth=False)
    assert "Tools: not inspected yet (inspection queued)" in result.stdout.splitlines()


def test_info_of_an_unknown_plugin_names_it_and_suggests_a_search(
    fake: FakeApi, invoke: Invoke
) -> None:
    fake.on(
        "GET",
        "/api/v1/plugins/detail/weathr",
        error(404, "PLUGIN_NOT_FOUND", "Plugin does not exist"),
    )
    result = invoke(public("info", "weathr"), auth=False)
    assert result.exit_code == 1
    assert result.stderr.strip() == (
        'error: PLUGIN_NOT_FOUND: no plugin "weathr"; look for it with `marketplace search '
        "weathr` (HTTP 404)"
    )


def test_info_json_has_plugin_versions_and_capabilities(fake: FakeApi, invoke: Invoke) -> None:
    fake.ok("GET", DETAIL, public_plugin())
    fake.ok("GET", VERSIONS, {"items": [{"version": "1.1.0"}]})
    fake.on("GET", CAPABILITIES, error(404, "NOT_FOUND", "Not Found"))
    data = stdout_json(invoke(public("info", "hello-weather", "--json"), auth=False))["data"]
    assert data["plugin"]["pluginKey"] == "hello-weather"
    assert data["versions"] == [{"version": "1.1.0"}]
    assert data["capabilities"] is None
