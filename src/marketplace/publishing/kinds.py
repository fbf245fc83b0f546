"""What the core needs to know about one kind of item: its tables, words and errors."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, Protocol, Self, TypeVar

from marketplace.config import Settings
from marketplace.errors import AppError


class ReviewedItem(Protocol):
    """The columns every kind of item has."""

    id: str
    owner_id: str
    review_status: str
    latest_version: str | None
    created_at: datetime


class ReviewedVersion(Protocol):
    """The columns every kind of version has."""

    id: str
    version: str
    review_status: str
    review_note: str | None
    findings: list[dict[str, str]]
    reviewed_by: str | None
    is_latest: bool
    blob_key: str | None
    sha256: str | None
    size: int | None
    created_at: datetime
    approved_at: datetime | None
    release: dict[str, Any] | None
    taken_down_at: datetime | None


ItemT = TypeVar("ItemT", bound=ReviewedItem)
VersionT = TypeVar("VersionT", bound=ReviewedVersion)


class _Loadable(Protocol):
    """A statement that takes loader options (a select of any columns)."""

    def options(self, *options: Any) -> Self: ...


S = TypeVar("S", bound=_Loadable)


def _nothing(*_args: Any) -> None:
    return None


def _no_names(_ref: str) -> dict[str, str]:
    return {}


@dataclass(frozen=True)
class ServedContent:
    """What a download serves, as its signed release record names it (CONTRACT 11)."""

    distribution: str
    sha256: str | None
    size: int | None


def package_content(version: Any) -> ServedContent:
    """The default: the version's package (a scenario is always served as one)."""
    return ServedContent("tarball", version.sha256, version.size)


@dataclass(frozen=True)
class ReviewSubject:
    """What a reviewer compares between two versions besides their files."""

    manifest: dict[str, Any]  # compared key by key (top level)
    permissions: frozenset[str]


def string_items(value: Any) -> frozenset[str]:
    """The strings of a JSON list (a manifest's `permissions`); anything else gives none."""
    if not isinstance(value, list):
        return frozenset()
    return frozenset(item for item in value if isinstance(item, str))


def package_subject(_version: Any, package_manifest: dict[str, Any] | None) -> ReviewSubject:
    """The default: the package's manifest.json, as it is (none: empty)."""
    manifest = dict(package_manifest or {})
    return ReviewSubject(manifest, string_items(manifest.get("permissions")))


@dataclass(frozen=True, eq=False)
class ItemKind(Generic[ItemT, VersionT]):
    """One kind of reviewed item. A new kind costs one of these, not a stack."""

    name: str  # "plugin": the item's audit resource type, and the word in messages
    title: str  # "Plugin"
    item_model: type[ItemT]
    version_model: type[VersionT]
    parent: Any  # the version column holding its item's id, e.g. PluginVersion.plugin_id
    lookup_column: Callable[[str], Any]  # the item column a path reference names
    key_of: Callable[[ItemT], str]  # the item's public key (file names, messages)
    not_found: Callable[[], AppError]
    not_owned: Callable[[], AppError]
    version_not_found: Callable[[], AppError]
    version_exists: Callable[[str], AppError]  # from a message
    package_invalid: Callable[[str], AppError]  # from a message
    file_required: Callable[[], AppError]
    package_missing: Callable[[str], AppError]  # a download of a version without a package
    package_too_large: type[AppError]
    package_max_bytes: Callable[[Settings], int]
    manifest_required: bool
    item_search: Callable[[], Sequence[Any]]  # item columns the admin search reads
    version_search: Callable[[], Sequence[Any]]  # columns the version queue search reads
    # The pluginKey a publishing token's `plugins` list names the item by (None: the kind
    # cannot be named there, so a token limited to some plugins cannot write it).
    token_key: Callable[[ItemT], str | None] = field(default=_nothing)
    # What an error's details name the item by, given the reference a request gave (its
    # key or id), e.g. {"pluginKey": "weather"}; the message stays the kind's own.
    names: Callable[[str], dict[str, str]] = field(default=_no_names)
    # Whether the item is reviewed itself, so that its pending versions wait with it while
    # it is rejected: no reviewer's work until the developer resubmits the item (plugins).
    versions_wait_with_item: bool = False
    # Kind-specific consequences of the generic moves (default: none).
    after_version_decision: Callable[[ItemT, VersionT], None] = field(default=_nothing)
    after_take_down: Callable[[ItemT], None] = field(default=_nothing)
    # The manifest and permissions a version shows in the reviewer's diff, given the
    # manifest.json of its package (None without a package or manifest.json).
    review_subject: Callable[[VersionT, dict[str, Any] | None], ReviewSubject] = field(
        default=package_subject
    )
    # What a download of the version serves, for its signed release record.
    served_content: Callable[[VersionT], ServedContent] = field(default=package_content)
    # Loader options for the versions a representation shows (a plugin's inspection).
    version_loads: tuple[Any, ...] = ()

    def loading_versions(self, query: S) -> S:
        """`query` with what a shown version needs loaded along (`version_loads`)."""
        return query.options(*self.version_loads) if self.version_loads else query

    @property
    def version_resource(self) -> str:
        """Audit resource type of the kind's versions."""
        return f"{self.name}_version"

    def item_column(self, name: str) -> Any:
        return getattr(self.item_model, name)

    def version_column(self, name: str) -> Any:
        return getattr(self.version_model, name)

    def missing(self, ref: str) -> AppError:
        """The kind's 404 for the item a request named, naming it in the details."""
        error = self.not_found()
        error.details.update(self.names(ref))
        return error

    def not_theirs(self, item: ItemT) -> AppError:
        """The kind's 403 for another developer's item, naming it by its key (keys are
        public: publishing one that exists already says so)."""
        error = self.not_owned()
        error.details.update(self.names(self.key_of(item)))
        return error

    def version_label(self, item: ItemT, version: str) -> str:
        return f"Version {version} of {self.key_of(item)}"

    def version_exists_error(self, item: ItemT, version: str) -> AppError:
        return self.version_exists(f"{self.version_label(item, version)} already exists")
