"""Constants the service also spells out in its own types stay equal to the shared ones.

Enums for the ORM and Literal types for the API schemas cannot be built from a tuple and
still be checked by mypy, so they are written out where they are used and pinned here.
"""

from __future__ import annotations

from typing import get_args

from marketplace.config import Settings
from marketplace.errors import IconTooLarge
from marketplace.media import icons
from marketplace.models import Distribution, PluginType
from marketplace.packages.archive import ArchiveLimits
from marketplace.plugins.schemas import Platform
from marketplace_rules import limits, vocabulary


def test_plugin_types_are_the_ones_the_database_stores() -> None:
    assert tuple(PluginType) == vocabulary.PLUGIN_TYPES


def test_distributions_are_the_ones_the_database_stores() -> None:
    assert tuple(Distribution) == vocabulary.DISTRIBUTIONS


def test_platforms_are_the_ones_the_api_accepts() -> None:
    assert get_args(Platform) == vocabulary.PLATFORMS


def default(setting: str) -> object:
    """A setting's default, whatever the environment running the tests sets."""
    return Settings.model_fields[setting].default


def test_icon_limit_is_defined_once() -> None:
    assert default("icon_max_kb") == limits.ICON_MAX_BYTES // limits.KIB == 256
    assert icons.ICON_MAX_BYTES == limits.ICON_MAX_BYTES
    assert IconTooLarge().message == "Icon is larger than 256 KB"


def test_package_limits_default_to_the_shared_ones() -> None:
    assert default("plugin_package_max_mb") == limits.PLUGIN_PACKAGE_MAX_MIB == 100
    assert default("scenario_package_max_mb") == limits.SCENARIO_PACKAGE_MAX_MIB == 50
    # Unpacked: 10x the upload limit, at most 1 GiB (CONTRACT 4).
    assert ArchiveLimits.for_package(100 * limits.MIB).max_unpacked_bytes == 1000 * limits.MIB
    assert ArchiveLimits.for_package(200 * limits.MIB).max_unpacked_bytes == limits.GIB
    assert ArchiveLimits(max_unpacked_bytes=1).max_members == limits.ARCHIVE_MAX_MEMBERS
