"""What the app sets up at start (app.state), as dependencies: no route reads app.state."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from marketplace.config import Settings


async def app_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


AppSettings = Annotated[Settings, Depends(app_settings)]
