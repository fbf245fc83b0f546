"""The blob store as a FastAPI dependency; the app sets `app.state.blob_store` at startup."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from marketplace.storage.base import BlobStore


async def get_blob_store(request: Request) -> BlobStore:
    store: BlobStore = request.app.state.blob_store
    return store


BlobStoreDep = Annotated[BlobStore, Depends(get_blob_store)]
