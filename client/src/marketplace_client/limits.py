"""The service's upload limits (`GET /api/v1/limits`), and the checks the publishing tool
makes against them before its first write: a package or an icon the service would refuse
is refused here, before any record or version is created and before any byte is sent."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from marketplace_client.api import ApiClient, ApiError, expect_object
from marketplace_client.errors import CliError
from marketplace_rules.icons import IconRefused, icon_data_url
from marketplace_rules.limits import ICON_MAX_BYTES, KIB, MIB

LIMITS_PATH = "/api/v1/limits"


def format_size(size: int) -> str:
    if size < KIB:
        return f"{size} B"
    if size < MIB:
        return f"{size / KIB:.1f} KiB"
    return f"{size / MIB:.1f} MiB"


def _sized(size: int) -> str:
    return f"{format_size(size)} ({size} bytes)"


@dataclass(frozen=True)
class ServiceLimits:
    # None: the service does not say (an older one without /limits); its 413 still will.
    package_max_bytes: int | None
    icon_max_bytes: int

    def check_package(self, size: int) -> None:
        limit = self.package_max_bytes
        if limit is not None and size > limit:
            raise CliError(
                "PLUGIN_PACKAGE_TOO_LARGE",
                f"the package is {_sized(size)}, over the service's limit of {_sized(limit)}; "
                "nothing was uploaded",
                details={"limit": limit, "size": size},
            )

    def check_icon(self, plugin_dir: Path, icon: str) -> None:
        """The icon file as the service judges it: size first, then the content."""
        try:
            data = (plugin_dir / icon).read_bytes()
        except OSError as exc:
            raise CliError("PLUGIN_ICON_INVALID", f"{icon}: cannot be read ({exc})") from exc
        if len(data) > self.icon_max_bytes:
            raise CliError(
                "PLUGIN_ICON_TOO_LARGE",
                f"{icon} is {_sized(len(data))}, over the service's icon limit of "
                f"{_sized(self.icon_max_bytes)}",
                details={"limit": self.icon_max_bytes, "size": len(data)},
            )
        try:
            icon_data_url(data, max_bytes=self.icon_max_bytes)
        except IconRefused as exc:
            raise CliError("PLUGIN_ICON_INVALID", f"{icon}: {exc.message}") from exc


def fetch_limits(api: ApiClient) -> ServiceLimits:
    """The service's limits; the icon limit of the contract when it does not say."""
    try:
        data = expect_object(api.get(LIMITS_PATH), "limits")
    except ApiError as exc:
        if exc.status != 404:
            raise
        return ServiceLimits(None, ICON_MAX_BYTES)
    package = data.get("pluginPackageMaxBytes")
    icon = data.get("iconMaxBytes")
    return ServiceLimits(
        package if isinstance(package, int) else None,
        icon if isinstance(icon, int) else ICON_MAX_BYTES,
    )
