"""What the core needs to know about one kind of item: its tables, words and errors.

A kind is a class: `PluginKind` and `ScenarioKind` subclass `ItemKind` and say, in typed
methods and typed column sets, what differs. Everything in `publishing` is written once
against this class.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, Protocol, Self, TypeVar

from sqlalchemy import true
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.elements import ColumnElement, SQLColumnExpression

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


# What the core's functions take: a kind of item and version, bound to the protocols.
ItemT = TypeVar("ItemT", bound=ReviewedItem)
VersionT = TypeVar("VersionT", bound=ReviewedVersion)
# The class's own parameters are unbounded: mypy checks a base class's arguments against a
# protocol before it has resolved the models' mapped columns, and rejects them. The bound is
# still checked where it matters, when a kind is passed to the core's functions.
Item = TypeVar("Item")
Version = TypeVar("Version")


class _Loadable(Protocol):
    """A statement that takes loader options (a select of any columns)."""

    def options(self, *options: Any) -> Self: ...


S = TypeVar("S", bound=_Loadable)


@dataclass(frozen=True)
class ItemColumns:
    """The item table's columns the core queries, typed."""

    id: SQLColumnExpression[str]
    owner_id: SQLColumnExpression[str]
    review_status: SQLColumnExpression[str]
    created_at: SQLColumnExpression[datetime]
    search: tuple[SQLColumnExpression[str | None], ...]  # what the admin list's search reads
    # The organization an item belongs to (CONTRACT 17); None: the kind has no organizations.
    org_id: SQLColumnExpression[str | None] | None = None


@dataclass(frozen=True)
class VersionColumns:
    """The version table's columns the core queries, typed."""

    id: SQLColumnExpression[str]
    item_id: SQLColumnExpression[str]  # the item the version belongs to
    version: SQLColumnExpression[str]
    review_status: SQLColumnExpression[str]
    is_latest: SQLColumnExpression[bool]
    created_at: SQLColumnExpression[datetime]
    release: SQLColumnExpression[dict[str, Any] | None]
    # What the version queue's search reads (its item's columns too: the queue joins them).
    search: tuple[SQLColumnExpression[str | None], ...]


@dataclass(frozen=True)
class ServedContent:
    """What a download serves, as its signed release record names it (CONTRACT 11)."""

    distribution: str
    sha256: str | None
    size: int | None


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


class ItemKind(ABC, Generic[Item, Version]):
    """One kind of reviewed item. A new kind costs one subclass, not a stack."""

    name: str  # "plugin": the item's audit resource type, and the word in messages
    title: str  # "Plugin"
    item_model: type[Item]
    version_model: type[Version]
    items: ItemColumns
    versions: VersionColumns
    # Whether a package must carry a manifest.json.
    manifest_required: bool
    package_too_large: type[AppError]  # 413 for a package over the kind's limit
    # Whether the item is reviewed itself, so that its pending versions wait with it while
    # it is rejected: no reviewer's work until the developer resubmits the item (plugins).
    versions_wait_with_item: bool = False
    # Loader options for the versions a representation shows (a plugin's inspection).
    version_loads: tuple[Any, ...] = ()

    # --- what differs per kind -------------------------------------------------------

    @abstractmethod
    def lookup_column(self, ref: str) -> SQLColumnExpression[str]:
        """The item column a path reference names."""

    @abstractmethod
    def key_of(self, item: Item) -> str:
        """The item's public key (file names, messages)."""

    @abstractmethod
    def item_id_of(self, version: Version) -> str:
        """The id of the item a version belongs to."""

    @abstractmethod
    def package_max_bytes(self, settings: Settings) -> int: ...

    @abstractmethod
    def not_found(self) -> AppError: ...

    @abstractmethod
    def not_owned(self) -> AppError: ...

    @abstractmethod
    def version_not_found(self) -> AppError: ...

    @abstractmethod
    def version_exists(self, message: str) -> AppError: ...

    @abstractmethod
    def package_invalid(self, message: str) -> AppError: ...

    @abstractmethod
    def file_required(self) -> AppError: ...

    @abstractmethod
    def package_missing(self, message: str) -> AppError:
        """A download of a version without a package."""

    def org_id_of(self, item: Item) -> str | None:
        """The organization whose members operate the item (None: a personal item, which
        only its owner operates). Default: the kind has no organizations."""
        return None

    def token_key(self, item: Item) -> str | None:
        """The pluginKey a publishing token's `plugins` list names the item by (None: the
        kind cannot be named there, so a token limited to some plugins cannot write it)."""
        return None

    def names(self, ref: str) -> dict[str, str]:
        """What an error's details name the item by, given the reference a request gave
        (its key or id), e.g. {"pluginKey": "weather"}; the message stays the kind's own."""
        return {}

    def after_version_decision(self, item: Item, version: Version) -> None:
        """Kind-specific consequences of approving or rejecting a version (default: none)."""

    def after_take_down(self, item: Item) -> None:
        """Kind-specific consequences of taking the item down (default: none)."""

    def becomes_current(self, version: Version) -> bool:
        """Whether approving the version makes it current (default: always; a plugin's
        prerelease does not, CONTRACT 16)."""
        return True

    def may_be_current(self) -> ColumnElement[bool]:
        """Which approved versions may become current when the current one is taken down."""
        return true()

    async def after_versions_change(self, session: AsyncSession, item: Item) -> None:
        """Kind-specific consequences of a version approved or taken down (default: none)."""

    def review_subject(
        self, version: Version, package_manifest: dict[str, Any] | None
    ) -> ReviewSubject:
        """The manifest and permissions a version shows in the reviewer's diff, given the
        manifest.json of its package (None without a package or manifest.json). Default:
        the package's manifest.json as it is."""
        manifest = dict(package_manifest or {})
        return ReviewSubject(manifest, string_items(manifest.get("permissions")))

    @abstractmethod
    def served_content(self, version: Version) -> ServedContent:
        """What a download of the version serves, for its signed release record."""

    # --- written once ------------------------------------------------------------------

    def loading_versions(self, query: S) -> S:
        """`query` with what a shown version needs loaded along (`version_loads`)."""
        return query.options(*self.version_loads) if self.version_loads else query

    @property
    def version_resource(self) -> str:
        """Audit resource type of the kind's versions."""
        return f"{self.name}_version"

    def missing(self, ref: str) -> AppError:
        """The kind's 404 for the item a request named, naming it in the details."""
        error = self.not_found()
        error.details.update(self.names(ref))
        return error

    def not_theirs(self, item: Item) -> AppError:
        """The kind's 403 for another developer's item, naming it by its key (keys are
        public: publishing one that exists already says so)."""
        error = self.not_owned()
        error.details.update(self.names(self.key_of(item)))
        return error

    def version_label(self, item: Item, version: str) -> str:
        return f"Version {version} of {self.key_of(item)}"

    def version_exists_error(self, item: Item, version: str) -> AppError:
        return self.version_exists(f"{self.version_label(item, version)} already exists")


def package_content(sha256: str | None, size: int | None) -> ServedContent:
    """A package served as it is stored (a scenario always; a plugin's tarball)."""
    return ServedContent("tarball", sha256, size)
