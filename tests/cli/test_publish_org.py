"""`marketplace publish --org SLUG` (CONTRACT 17): a new plugin goes into the organization,
through the developer group whatever the role; an existing plugin elsewhere is refused."""

from __future__ import annotations

from pathlib import Path

from .fake_api import FakeApi, error
from .helpers import Invoke, as_admin, as_developer, make_plugin
from .test_publish import DEV, developer_new, plugin


def test_publish_into_an_organization_sends_its_slug(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    developer_new(fake)
    result = invoke(["publish", str(make_plugin(tmp_path)), "--org", "acme-tools"])
    assert result.exit_code == 0, result.output
    assert fake.find("POST", f"{DEV}/publish").json["org"] == "acme-tools"
    assert "created plugin (developer group, organization acme-tools)" in result.stderr


def test_an_administrator_publishing_into_an_organization_uses_the_developer_group(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    as_admin(fake)
    fake.ok("GET", "/api/v1/plugins/categories", {"items": [{"key": "productivity"}]})
    fake.on("GET", f"{DEV}/demo-plugin", error(404, "PLUGIN_NOT_FOUND", "Plugin does not exist"))
    fake.ok("POST", f"{DEV}/publish", plugin(reviewStatus="pending"), status=201)
    fake.ok("POST", f"{DEV}/p-1/upload-version", {"id": "v-1"}, status=201)
    result = invoke(["publish", str(make_plugin(tmp_path)), "--org", "acme-tools"])
    assert result.exit_code == 0, result.output
    assert fake.writes() == [("POST", f"{DEV}/publish"), ("POST", f"{DEV}/p-1/upload-version")]
    assert fake.find("POST", f"{DEV}/publish").json["org"] == "acme-tools"


def test_an_existing_plugin_of_another_organization_is_refused_before_any_write(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    as_developer(fake)
    fake.ok("GET", f"{DEV}/demo-plugin", plugin(org={"slug": "other-org", "name": "Other"}))
    result = invoke(["publish", str(make_plugin(tmp_path)), "--org", "acme-tools"])
    assert result.exit_code == 1
    assert "ORG_MISMATCH" in result.stderr
    assert 'belongs to organization "other-org"' in result.stderr
    assert fake.writes() == []


def test_an_existing_plugin_of_that_organization_is_updated(
    tmp_path: Path, fake: FakeApi, invoke: Invoke
) -> None:
    as_developer(fake)
    shared = plugin(org={"slug": "acme-tools", "name": "Acme"}, versions=[{"version": "0.9.0"}])
    fake.ok("GET", f"{DEV}/demo-plugin", shared)
    fake.ok("PUT", f"{DEV}/p-1", plugin())
    fake.ok("POST", f"{DEV}/p-1/upload-version", {}, status=201)
    result = invoke(["publish", str(make_plugin(tmp_path)), "--org", "acme-tools"])
    assert result.exit_code == 0, result.output
    assert fake.writes() == [("PUT", f"{DEV}/p-1"), ("POST", f"{DEV}/p-1/upload-version")]
