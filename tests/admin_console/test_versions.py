"""A version's page and its decision: the API's review, read back through the API."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from marketplace.models import Plugin, PluginVersion, ReviewStatus
from tests.admin_console.helpers import (
    csrf_of,
    logged_in,
    post_form,
    scenario_with_version,
    set_findings,
    text_of,
)
from tests.factories import Account, Factory
from tests.helpers import ok

NOTE_REQUIRED = "A rejection needs a note"


async def _pending(factory: Factory) -> tuple[Account, Plugin, PluginVersion]:
    """An approved plugin whose 1.0.0 is current and whose 1.1.0 waits for review."""
    admin = await factory.admin()
    plugin = await factory.plugin()
    await factory.version(plugin, "1.0.0")
    version = await factory.version(plugin, "1.1.0", review_status=ReviewStatus.PENDING)
    return admin, plugin, version


async def _versions(client: httpx.AsyncClient, admin: Account, plugin: Plugin) -> dict[str, Any]:
    data = ok(
        await client.get(f"/api/v1/admin/plugins/{plugin.id}/versions", headers=admin.headers)
    )
    return {v["version"]: v for v in data["items"]}


async def _audit(client: httpx.AsyncClient, admin: Account, resource_id: str) -> list[Any]:
    data = ok(
        await client.get(
            "/api/v1/admin/audit-logs", params={"resourceId": resource_id}, headers=admin.headers
        )
    )
    items: list[Any] = data["items"]
    return items


def _url(version: PluginVersion) -> str:
    return f"/console/plugins/versions/{version.id}"


async def test_version_page_shows_the_version_and_the_decision_form(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    admin, plugin, version = await _pending(factory)
    await logged_in(client, admin)
    response = await client.get(_url(version))
    assert response.status_code == 200
    text = text_of(response.text)
    assert plugin.plugin_key in text and "1.1.0" in text and "pending" in text
    assert '<label for="note">Note</label>' in response.text
    assert 'value="approve" class="btn btn-approve">Approve</button>' in response.text
    assert 'value="reject" class="btn btn-reject">Reject</button>' in response.text
    # The earlier version is listed, and the diff is not wired yet.
    assert "/console/plugins/versions/" in response.text and "1.0.0" in text
    assert "Changes are not available for this version" in text


async def test_approve_through_the_console_makes_the_version_current(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    admin, plugin, version = await _pending(factory)
    await logged_in(client, admin)
    response = await post_form(client, _url(version), {"decision": "approve", "note": "ok"})
    assert response.status_code == 303
    assert response.headers["location"] == _url(version) + "?done=approved"
    versions = await _versions(client, admin, plugin)
    assert versions["1.1.0"]["reviewStatus"] == "approved"
    assert versions["1.1.0"]["isLatest"] is True
    assert versions["1.0.0"]["isLatest"] is False
    detail = ok(await client.get(f"/api/v1/admin/plugins/{plugin.id}", headers=admin.headers))
    assert detail["latestVersion"] == "1.1.0"
    [entry] = await _audit(client, admin, version.id)
    assert entry["action"] == "REVIEW_APPROVE" and entry["actorId"] == admin.id
    assert entry["detail"] == {
        "resourceType": "plugin_version",
        "resourceId": version.id,
        "outcome": "approved",
        "trigger": "admin",
        "note": "ok",
    }
    page = await client.get(response.headers["location"])
    assert "Version approved" in page.text


async def test_reject_through_the_console_stores_the_note(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    admin, plugin, version = await _pending(factory)
    await logged_in(client, admin)
    note = "index.js reads ~/.ssh; remove that"
    response = await post_form(client, _url(version), {"decision": "reject", "note": note})
    assert response.status_code == 303
    versions = await _versions(client, admin, plugin)
    assert versions["1.1.0"]["reviewStatus"] == "rejected"
    assert versions["1.1.0"]["reviewNote"] == note
    assert versions["1.0.0"]["isLatest"] is True
    [entry] = await _audit(client, admin, version.id)
    assert entry["action"] == "REVIEW_REJECT" and entry["detail"]["note"] == note


@pytest.mark.parametrize("note", ["", "   \n  "])
async def test_reject_without_a_note_is_refused_and_changes_nothing(
    client: httpx.AsyncClient, factory: Factory, note: str
) -> None:
    admin, plugin, version = await _pending(factory)
    await logged_in(client, admin)
    response = await post_form(client, _url(version), {"decision": "reject", "note": note})
    assert response.status_code == 400
    assert NOTE_REQUIRED in response.text
    assert 'value="reject"' in response.text  # the form is still there
    assert (await _versions(client, admin, plugin))["1.1.0"]["reviewStatus"] == "pending"
    assert await _audit(client, admin, version.id) == []


async def test_a_note_with_hidden_characters_is_refused_as_the_api_refuses_it(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    admin, plugin, version = await _pending(factory)
    await logged_in(client, admin)
    response = await post_form(
        client, _url(version), {"decision": "reject", "note": "fine\u202egnp.exe"}
    )
    assert response.status_code == 400
    assert "Note:" in text_of(response.text)
    assert (await _versions(client, admin, plugin))["1.1.0"]["reviewStatus"] == "pending"


async def test_a_note_over_the_apis_limit_is_refused(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    admin, plugin, version = await _pending(factory)
    await logged_in(client, admin)
    response = await post_form(client, _url(version), {"decision": "reject", "note": "x" * 5001})
    assert response.status_code == 400
    assert (await _versions(client, admin, plugin))["1.1.0"]["reviewStatus"] == "pending"


async def test_a_decision_other_than_approve_or_reject_is_refused(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    admin, plugin, version = await _pending(factory)
    await logged_in(client, admin)
    response = await post_form(client, _url(version), {"decision": "delete"})
    assert response.status_code == 400
    assert (await _versions(client, admin, plugin))["1.1.0"]["reviewStatus"] == "pending"


@pytest.mark.parametrize("token", [None, "", "wrong-token"])
async def test_a_decision_without_the_sessions_csrf_token_is_refused(
    client: httpx.AsyncClient, factory: Factory, token: str | None
) -> None:
    admin, plugin, version = await _pending(factory)
    await logged_in(client, admin)
    data = {"decision": "approve"} | ({"csrf_token": token} if token is not None else {})
    response = await client.post(_url(version), data=data)
    assert response.status_code == 403
    assert "nothing was changed" in response.text
    assert (await _versions(client, admin, plugin))["1.1.0"]["reviewStatus"] == "pending"
    assert await _audit(client, admin, version.id) == []


async def test_another_sessions_csrf_token_does_not_work(
    app: Any, client: httpx.AsyncClient, factory: Factory
) -> None:
    admin, plugin, version = await _pending(factory)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as other:
        await logged_in(other, await factory.admin())
        foreign = csrf_of((await other.get("/console")).text)
    await logged_in(client, admin)
    response = await client.post(_url(version), data={"decision": "approve", "csrf_token": foreign})
    assert response.status_code == 403
    assert (await _versions(client, admin, plugin))["1.1.0"]["reviewStatus"] == "pending"


async def test_an_already_reviewed_version_shows_the_services_refusal(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    admin, plugin, version = await _pending(factory)
    await logged_in(client, admin)
    page = await client.get(_url(version))  # the form as first shown
    token = csrf_of(page.text)
    ok(
        await client.post(
            f"/api/v1/admin/plugins/versions/{version.id}/review",
            json={"approved": True},
            headers=admin.headers,
        )
    )
    response = await client.post(
        _url(version), data={"decision": "reject", "note": "late", "csrf_token": token}
    )
    assert response.status_code == 409
    assert "Only a pending version can be rejected, not approved" in response.text
    assert (await _versions(client, admin, plugin))["1.1.0"]["reviewStatus"] == "approved"
    assert len(await _audit(client, admin, version.id)) == 1


@pytest.mark.parametrize(
    "path",
    [
        "/console/plugins/versions/00000000-0000-0000-0000-000000000000",
        "/console/plugins/versions/not-an-id",
        "/console/scenarios/versions/00000000-0000-0000-0000-000000000000",
        "/console/widgets/versions/00000000-0000-0000-0000-000000000000",
    ],
)
async def test_unknown_versions_are_a_404_page(
    client: httpx.AsyncClient, factory: Factory, path: str
) -> None:
    await logged_in(client, await factory.admin())
    response = await client.get(path)
    assert response.status_code == 404
    assert response.headers["content-type"].startswith("text/html")
    assert "Traceback" not in response.text


async def test_a_decision_on_an_unknown_version_is_a_404_page(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    await logged_in(client, await factory.admin())
    token = csrf_of((await client.get("/console")).text)
    response = await client.post(
        "/console/plugins/versions/00000000-0000-0000-0000-000000000000",
        data={"decision": "approve", "csrf_token": token},
    )
    assert response.status_code == 404


async def test_findings_are_grouped_by_severity_with_counts(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    admin, _plugin, version = await _pending(factory)
    await set_findings(
        sessionmaker,
        version.id,
        [
            {"code": "W1", "severity": "warning", "path": "file:index.js", "message": "eval()"},
            {"code": "E1", "severity": "error", "path": "$.main", "message": "<b>bad</b>"},
            {"code": "W2", "severity": "warning", "path": "$.icon", "message": "large icon"},
            {"code": "I1", "severity": "info", "path": "$", "message": "fyi"},
        ],
    )
    await logged_in(client, admin)
    page = (await client.get(_url(version))).text
    assert "2 warnings" in page and "1 error<" in page and "1 info" in page
    # Errors come first, then warnings, then information.
    assert page.index("finding-error") < page.index("finding-warning") < page.index("finding-info")
    assert "&lt;b&gt;bad&lt;/b&gt;" in page and "<b>bad</b>" not in page


async def test_manifest_is_pretty_printed_and_escaped(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    admin = await factory.admin()
    plugin = await factory.plugin()
    manifest = {
        "id": plugin.plugin_key,
        "version": "1.0.0",
        "main": "index.js",
        "description": "<script>alert(1)</script>",
    }
    version = await factory.version(plugin, review_status=ReviewStatus.PENDING, manifest=manifest)
    await logged_in(client, admin)
    page = (await client.get(_url(version))).text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script>alert(1)" not in page
    assert "  &#34;main&#34;: &#34;index.js&#34;" in page  # indented, one key a line


async def test_the_version_page_shows_the_items_audit_history(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    admin, plugin, version = await _pending(factory)
    await logged_in(client, admin)
    await post_form(client, _url(version), {"decision": "reject", "note": "needs work"})
    newer = await factory.version(plugin, "1.2.0", review_status=ReviewStatus.PENDING)
    page = text_of((await client.get(_url(newer))).text)
    assert "REVIEW_REJECT" in page and "needs work" in page


async def test_the_developers_rejections_of_other_items_are_listed(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    admin = await factory.admin()
    developer = await factory.developer()
    other = await factory.plugin(developer, name="Older Plugin")
    await factory.version(other, "0.9.0", review_status=ReviewStatus.REJECTED)
    plugin = await factory.plugin(developer)
    version = await factory.version(plugin, review_status=ReviewStatus.PENDING)
    await logged_in(client, admin)
    page = text_of((await client.get(_url(version))).text)
    assert "Earlier rejections of this developer" in page and "Older Plugin 0.9.0" in page


async def test_scenario_versions_use_the_same_page_and_review(
    client: httpx.AsyncClient, factory: Factory, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    admin = await factory.admin()
    developer = await factory.developer()
    version = await scenario_with_version(sessionmaker, developer, "daily-report")
    await logged_in(client, admin)
    url = f"/console/scenarios/versions/{version.id}"
    page = await client.get(url)
    assert page.status_code == 200
    assert "Metadata" in page.text and "filesystem:read" in page.text
    response = await post_form(client, url, {"decision": "approve"})
    assert response.status_code == 303
    data = ok(await client.get("/api/v1/admin/scenarios/daily-report", headers=admin.headers))
    assert data["reviewStatus"] == "approved"
    assert data["versions"][0]["reviewStatus"] == "approved"
    [entry] = await _audit(client, admin, version.id)
    assert entry["detail"]["resourceType"] == "scenario_version"


async def test_the_package_link_redirects_to_a_signed_download(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    admin, plugin, version = await _pending(factory)
    await logged_in(client, admin)
    response = await client.get(_url(version) + "/package")
    assert response.status_code == 303
    location = urlsplit(response.headers["location"])
    assert location.path.endswith(f"/{version.blob_key}")
    query = parse_qs(location.query)
    assert query["filename"] == [f"{plugin.plugin_key}-1.1.0.tar.gz"] and query["sig"]
