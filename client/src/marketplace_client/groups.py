"""The two ways to publish: the admin group (official plugins, versions live at once) and
the developer group (everything waits for review). `open_group` picks one by the role the
token belongs to (`GET /api/v1/auth/me`)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from marketplace_client.api import ApiClient, ApiError, expect_list, expect_object, expect_str
from marketplace_client.errors import CliError
from marketplace_client.manifest_check import PluginManifest
from marketplace_client.upload import ProgressFile
from marketplace_rules.vocabulary import ICON_MEDIA_TYPES, PLATFORMS

ADMIN_ROLES = frozenset({"ADMIN", "SUPER_ADMIN"})
PACKAGE_TYPE = "application/gzip"
SEARCH_PAGE_SIZE = 100
OPTIONAL_TEXTS = ("license", "homepage", "repository")


@dataclass(frozen=True)
class RemotePlugin:
    id: str
    plugin_key: str
    type: str | None
    # Known only from the developer detail; the admin group asks for them separately.
    versions: tuple[str, ...] | None = None
    owner_id: str | None = None
    # The version representations (sha256, manifest, distribution) of the detail.
    version_items: tuple[dict[str, Any], ...] | None = None
    # The slug of the organization it belongs to (CONTRACT 17); None: personal or unknown.
    org: str | None = None

    @classmethod
    def from_json(cls, data: Any, what: str) -> RemotePlugin:
        body = expect_object(data, what)
        versions = body.get("versions")
        items = None
        if isinstance(versions, list):
            items = tuple(item for item in versions if isinstance(item, dict))
        kind = body.get("type")
        owner = body.get("ownerId")
        org = body.get("org")
        slug = org.get("slug") if isinstance(org, dict) else None
        return cls(
            id=expect_str(body, "id", what),
            plugin_key=expect_str(body, "pluginKey", what),
            type=kind if isinstance(kind, str) else None,
            versions=None if items is None else tuple(str(i.get("version")) for i in items),
            owner_id=owner if isinstance(owner, str) else None,
            version_items=items,
            org=slug if isinstance(slug, str) else None,
        )


def _texts(manifest: PluginManifest) -> dict[str, Any]:
    """name, nameZh, description, descriptionZh: the Chinese ones fall back to the others."""
    name = manifest.text("name") or manifest.id
    description = manifest.text("description") or name
    return {
        "name": name,
        "nameZh": manifest.text("nameZh") or name,
        "description": description,
        "descriptionZh": manifest.text("descriptionZh") or description,
    }


def _optional_fields(manifest: PluginManifest) -> dict[str, Any]:
    body: dict[str, Any] = {}
    tags = manifest.string_list("tags")
    if tags is not None:
        body["tags"] = tags
    for key in OPTIONAL_TEXTS:
        value = manifest.text(key)
        if value is not None:
            body[key] = value
    return body


def _icon_name(manifest: PluginManifest) -> str | None:
    """The icon as a name, when it is not a local file to upload."""
    if manifest.icon is None or manifest.local_icon is not None:
        return None
    return manifest.icon


def publish_body(manifest: PluginManifest) -> dict[str, Any]:
    """The developer publish body (seed 4.2)."""
    return {
        "pluginKey": manifest.id,
        **_texts(manifest),
        "type": manifest.type,
        "category": manifest.category,
        **_optional_fields(manifest),
    }


def update_body(manifest: PluginManifest) -> dict[str, Any]:
    """What the developer PUT accepts; anything else would be a 400."""
    body: dict[str, Any] = {**_texts(manifest), "category": manifest.category}
    body.update(_optional_fields(manifest))
    platforms = manifest.string_list("platforms")
    if platforms is not None:
        body["platforms"] = platforms
    return body


class PluginGroup(ABC):
    """One of the two plugin groups of the API, as the publishing commands use it."""

    name: str
    prefix: str
    upload_path: str
    # Whether what this group creates waits for an administrator's review.
    reviewed: bool

    def __init__(self, api: ApiClient, account_id: str | None = None) -> None:
        self.api = api
        # The caller's account (from auth/me; unknown for a publishing token).
        self.account_id = account_id

    def owned_by_another(self, plugin: RemotePlugin) -> bool:
        """The plugin belongs to an account other than the caller's (as far as known)."""
        return None not in (plugin.owner_id, self.account_id) and plugin.owner_id != self.account_id

    def remote_version(self, plugin: RemotePlugin, version: str) -> dict[str, Any] | None:
        """The service's representation of `version` of the plugin, None when it has none."""
        for item in self.version_items(plugin):
            if item.get("version") == version:
                return item
        return None

    @abstractmethod
    def version_items(self, plugin: RemotePlugin) -> tuple[dict[str, Any], ...]: ...

    @abstractmethod
    def categories(self) -> list[str]: ...

    @abstractmethod
    def find(self, plugin_key: str) -> RemotePlugin | None: ...

    @abstractmethod
    def create(self, manifest: PluginManifest, org: str | None = None) -> RemotePlugin:
        """Create the plugin record; `org`: in that organization (developer group only)."""

    @abstractmethod
    def remote_versions(self, plugin: RemotePlugin) -> tuple[str, ...]: ...

    @property
    def can_delete(self) -> bool:
        return False

    def delete(self, plugin_id: str) -> None:
        raise NotImplementedError

    def update_body(self, manifest: PluginManifest) -> dict[str, Any]:
        return update_body(manifest)

    def update(self, plugin_id: str, manifest: PluginManifest) -> None:
        self.api.put(f"{self.prefix}/{plugin_id}", json=self.update_body(manifest))

    def upload_version(
        self,
        plugin_id: str,
        package: Path,
        version: str,
        changelog: str | None,
        on_progress: Callable[[int], None],
    ) -> Any:
        fields = {"version": version}
        if changelog is not None:
            fields["changelog"] = changelog
        with ProgressFile(package, on_progress) as handle:
            files = {"file": (package.name, handle, PACKAGE_TYPE)}
            return self.api.post(
                f"{self.prefix}/{plugin_id}/{self.upload_path}", data=fields, files=files
            )

    def create_version(
        self, plugin_id: str, version: str, changelog: str | None, manifest: dict[str, Any]
    ) -> Any:
        body: dict[str, Any] = {"version": version, "manifest": manifest}
        if changelog is not None:
            body["changelog"] = changelog
        return self.api.post(f"{self.prefix}/{plugin_id}/create-version", json=body)

    def upload_icon(self, plugin_id: str, icon: Path) -> None:
        content_type = ICON_MEDIA_TYPES.get(icon.suffix.lower(), "application/octet-stream")
        with icon.open("rb") as handle:
            files = {"file": (icon.name, handle, content_type)}
            self.api.post(f"{self.prefix}/{plugin_id}/icon", files=files)


def _category_keys(data: Any, what: str) -> list[str]:
    items = expect_list(expect_object(data, what).get("items"), f"{what} items")
    return [expect_str(expect_object(item, what), "key", what) for item in items]


class AdminGroup(PluginGroup):
    name = "admin"
    reviewed = False
    prefix = "/api/v1/admin/plugins"
    upload_path = "upload"

    def categories(self) -> list[str]:
        return _category_keys(self.api.get(f"{self.prefix}/categories"), "categories")

    def find(self, plugin_key: str) -> RemotePlugin | None:
        page = 1
        while True:
            params: dict[str, str | int] = {
                "search": plugin_key,
                "limit": SEARCH_PAGE_SIZE,
                "page": page,
            }
            data = expect_object(self.api.get(self.prefix, params=params), "plugin list")
            items = expect_list(data.get("items"), "plugin list items")
            for item in items:
                if isinstance(item, dict) and item.get("pluginKey") == plugin_key:
                    return RemotePlugin.from_json(item, "plugin")
            total = data.get("total")
            if not items or not isinstance(total, int) or page * SEARCH_PAGE_SIZE >= total:
                return None
            page += 1

    def create(self, manifest: PluginManifest, org: str | None = None) -> RemotePlugin:
        if org is not None:  # open_group(developer=True) keeps an --org publish away
            raise CliError("ORG_NOT_FOR_ADMIN", "official plugins belong to no organization")
        body = publish_body(manifest)
        icon = _icon_name(manifest)
        if icon is not None:
            body["icon"] = icon
        body["source"] = "official"
        body["platforms"] = manifest.string_list("platforms") or list(PLATFORMS)
        return RemotePlugin.from_json(self.api.post(self.prefix, json=body), "created plugin")

    def update_body(self, manifest: PluginManifest) -> dict[str, Any]:
        body = update_body(manifest)
        icon = _icon_name(manifest)
        if icon is not None:
            body["icon"] = icon
        return body

    @property
    def can_delete(self) -> bool:
        return True

    def delete(self, plugin_id: str) -> None:
        self.api.delete(f"{self.prefix}/{plugin_id}")

    def remote_versions(self, plugin: RemotePlugin) -> tuple[str, ...]:
        return tuple(str(item.get("version")) for item in self.version_items(plugin))

    def version_items(self, plugin: RemotePlugin) -> tuple[dict[str, Any], ...]:
        data = expect_object(self.api.get(f"{self.prefix}/{plugin.id}/versions"), "versions")
        items = expect_list(data.get("items"), "versions items")
        return tuple(item for item in items if isinstance(item, dict))


class DeveloperGroup(PluginGroup):
    name = "developer"
    reviewed = True
    prefix = "/api/v1/developer/plugins"
    upload_path = "upload-version"

    def categories(self) -> list[str]:
        return _category_keys(self.api.get("/api/v1/plugins/categories"), "categories")

    def find(self, plugin_key: str) -> RemotePlugin | None:
        try:
            data = self.api.get(f"{self.prefix}/{plugin_key}")
        except ApiError as exc:
            if exc.code == "PLUGIN_NOT_FOUND":
                return None
            raise
        return RemotePlugin.from_json(data, "plugin")

    def create(self, manifest: PluginManifest, org: str | None = None) -> RemotePlugin:
        body = publish_body(manifest)
        if org is not None:
            body["org"] = org
        data = self.api.post(f"{self.prefix}/publish", json=body)
        return RemotePlugin.from_json(data, "published plugin")

    def remote_versions(self, plugin: RemotePlugin) -> tuple[str, ...]:
        return plugin.versions or ()

    def version_items(self, plugin: RemotePlugin) -> tuple[dict[str, Any], ...]:
        return plugin.version_items or ()


def current_user(api: ApiClient) -> dict[str, Any]:
    data = expect_object(api.get("/api/v1/auth/me"), "auth/me")
    return expect_object(data.get("user"), "auth/me user")


def current_role(api: ApiClient) -> str:
    return expect_str(current_user(api), "role", "auth/me user")


def open_group(api: ApiClient, *, developer: bool = False) -> PluginGroup:
    """The admin group for ADMIN / SUPER_ADMIN tokens, else the developer group. A
    publishing token always publishes through the developer group (the only writes it may
    make) and may not ask who it belongs to (account endpoints refuse tokens). `developer`
    picks the developer group whatever the role (publishing into an organization)."""
    if api.uses_publishing_token:
        return DeveloperGroup(api)
    user = current_user(api)
    account = user.get("id") if isinstance(user.get("id"), str) else None
    if not developer and expect_str(user, "role", "auth/me user") in ADMIN_ROLES:
        return AdminGroup(api, account)
    return DeveloperGroup(api, account)
