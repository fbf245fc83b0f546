"""Page parameters: page >= 1 (0 is 400), sizes over the maximum are reduced, not refused."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Query

MAX_PAGE_SIZE = 100


@dataclass(frozen=True)
class Page:
    page: int
    size: int

    @property
    def offset(self) -> int:
        return (self.page - 1) * self.size


async def page_size_params(
    page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
    page_size: Annotated[int, Query(alias="pageSize", ge=1)] = 20,
) -> Page:
    return Page(page=page, size=min(page_size, MAX_PAGE_SIZE))


async def limit_params(
    page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
    limit: Annotated[int, Query(ge=1)] = 20,
) -> Page:
    return Page(page=page, size=min(limit, MAX_PAGE_SIZE))


# Developer and public lists use page/pageSize; admin lists use page/limit (seed 4.5).
PageSizeParams = Annotated[Page, Depends(page_size_params)]
LimitParams = Annotated[Page, Depends(limit_params)]
