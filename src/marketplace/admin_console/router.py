"""All console routes under /console, its stylesheet, and a 404 page for the rest."""

from __future__ import annotations

from marketplace.admin_console import (
    audit,
    categories,
    developers,
    log,
    plugins,
    queue,
    versions,
)
from marketplace.web.http import site_router
from marketplace.web.login import login_routes
from marketplace.web.routes import last_routes, stylesheet_route
from marketplace.web.sites import CONSOLE

router = site_router(CONSOLE)
router.include_router(stylesheet_route(CONSOLE))
router.include_router(login_routes(CONSOLE))
for part in (queue, versions, plugins, developers, categories, audit, log):
    router.include_router(part.router)
router.include_router(last_routes(CONSOLE))  # last: it answers every other path
