from __future__ import annotations

import pytest
from fastapi import FastAPI

from tests.commerce.helpers import FakeBlobStore


@pytest.fixture
def blob_store(app: FastAPI) -> FakeBlobStore:
    store = FakeBlobStore()
    app.state.blob_store = store
    return store
