"""The reference for bench_browse.py: a bare FastAPI endpoint returning a fixed 20-item page.

The page is a plain dict shaped like the service's browse envelope (20 plugin-like items
with the same keys and similar values), returned without a response model, so FastAPI's
default serialization runs on every request (jsonable_encoder, then JSONResponse's
json.dumps). Served
by uvicorn with the same options as `marketplace serve` (uvloop and httptools when
installed, access log off, log level warning).

    python bench/bare_app.py PORT
"""

from __future__ import annotations

import sys
from typing import Any

import uvicorn
from fastapi import FastAPI


def _item(index: int) -> dict[str, Any]:
    return {
        "id": f"00000000-0000-4000-8000-{index:012d}",
        "pluginKey": f"bench-plugin-{index:06d}",
        "name": f"Data Sync Assistant {index}",
        "nameZh": f"数据同步助手 {index}",
        "description": f"Synchronises files and tables between services ({index}).",
        "descriptionZh": f"在服务之间同步文件和表格（{index}）。",
        "type": "tool",
        "category": "productivity",
        "isFree": True,
        "price": "0.00",
        "validityDays": None,
        "tags": ["sync", "files", "同步"],
        "license": "MIT",
        "homepage": None,
        "repository": None,
        "icon": None,
        "source": "developer",
        "platforms": [],
        "featured": False,
        "enabled": True,
        "reviewStatus": "approved",
        "latestVersion": "1.0.0",
        "downloadCount": 1000 - index,
        "ratingAverage": "4.25",
        "ratingCount": 12,
        "createdAt": "2026-11-23T05:00:00Z",
        "updatedAt": "2026-11-23T05:00:00Z",
        "developer": {"id": "00000000-0000-4000-8000-000000000000", "name": "Bench Developer"},
        "purchase": None,
    }


PAGE: dict[str, Any] = {
    "success": True,
    "data": {"items": [_item(i) for i in range(20)], "total": 1000, "page": 1, "pageSize": 20},
}

app = FastAPI()


# No response model (response_model=None, as for an unannotated function): FastAPI runs
# jsonable_encoder over the dict and JSONResponse encodes it, on every request.
@app.get("/page", response_model=None)
async def page() -> dict[str, Any]:
    return PAGE


@app.get("/healthz")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", access_log=False)
