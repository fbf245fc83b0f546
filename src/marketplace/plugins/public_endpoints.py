"""Public plugin group (seed 4.3), the part the publishing tool needs: the category table.

Developers cannot read the admin category list, so `marketplace publish` with a developer
token checks the manifest's category against this one.
"""

from __future__ import annotations

from marketplace.auth.deps import OptionalUser
from marketplace.db import DbSession
from marketplace.kit.routing import api_router
from marketplace.kit.schemas import Envelope
from marketplace.plugins import service
from marketplace.plugins.schemas import PublicCategoryItems, PublicCategoryOut

router = api_router(prefix="/api/v1/plugins", tags=["public: plugins"])


@router.get("/categories")
async def list_categories(_user: OptionalUser, session: DbSession) -> Envelope[PublicCategoryItems]:
    """Categories with the number of listed plugins in each (no login needed)."""
    rows = await service.categories_with_listed_counts(session)
    return Envelope(
        data=PublicCategoryItems(
            items=[
                PublicCategoryOut(key=c.key, name=c.name, name_zh=c.name_zh, count=n)
                for c, n in rows
            ]
        )
    )
