"""All portal routes under /portal, its stylesheet, and a 404 page for the rest."""

from __future__ import annotations

from marketplace.portal import orgs, plugins, tokens
from marketplace.web.http import site_router
from marketplace.web.login import login_routes
from marketplace.web.routes import last_routes, stylesheet_route
from marketplace.web.sites import PORTAL

router = site_router(PORTAL)
router.include_router(stylesheet_route(PORTAL))
router.include_router(login_routes(PORTAL))
for part in (plugins, tokens, orgs):
    router.include_router(part.router)
router.include_router(last_routes(PORTAL))  # last: it answers every other path
