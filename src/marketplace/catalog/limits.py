"""`GET /api/v1/limits`: the sizes this service accepts, so that a client can refuse an
upload before sending it (the publishing tool checks a package and an icon against them
before its first write).

Public and static: no token needed (an invalid one is still 401, as everywhere), no
database. Its own prefix, so that no `/{...}` route
of `/api/v1/plugins` can read "limits" as a plugin reference.
"""

from __future__ import annotations

from marketplace.auth.deps import OptionalUser
from marketplace.kit.routing import api_router
from marketplace.kit.schemas import Envelope, OutputModel
from marketplace.kit.state import AppSettings
from marketplace_rules.vocabulary import ICON_MEDIA_TYPES

router = api_router(prefix="/api/v1", tags=["marketplace: public"])


class LimitsOut(OutputModel):
    plugin_package_max_bytes: int
    scenario_package_max_bytes: int
    icon_max_bytes: int
    icon_media_types: list[str]


@router.get("/limits", response_model=Envelope[LimitsOut])
async def limits(settings: AppSettings, _user: OptionalUser) -> Envelope[LimitsOut]:
    """The upload limits in bytes (a size equal to a limit passes) and the icon media
    types the icon endpoints take. A 413 for an upload carries `limit` and `size` too."""
    return Envelope(
        data=LimitsOut(
            plugin_package_max_bytes=settings.plugin_package_max_bytes,
            scenario_package_max_bytes=settings.scenario_package_max_bytes,
            icon_max_bytes=settings.icon_max_bytes,
            icon_media_types=sorted(set(ICON_MEDIA_TYPES.values())),
        )
    )


__all__ = ["router"]
