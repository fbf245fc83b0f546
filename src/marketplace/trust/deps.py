"""The app's keyring as a dependency (no route reads app.state)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from marketplace.trust.keyring import Keyring


async def app_keyring(request: Request) -> Keyring:
    keyring: Keyring = request.app.state.keyring
    return keyring


KeyringDep = Annotated[Keyring, Depends(app_keyring)]
