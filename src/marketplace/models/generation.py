"""The catalogue generation: one row, bumped in the same transaction as every listed change."""

from __future__ import annotations

from sqlalchemy import BigInteger, CheckConstraint, Integer
from sqlalchemy.orm import Mapped, mapped_column

from marketplace.models.base import Base


class CatalogGeneration(Base):
    """Per-process caches of public reads are valid only for the numbers they were built at.

    `generation` moves with anything a public response shows (listing, fields, counts,
    ratings); `listing_generation` only with what decides membership and filters (review
    state, enabled, category, type, price, searchable text), so cached totals survive
    installs and ratings.
    """

    __tablename__ = "catalog_generation"
    __table_args__ = (CheckConstraint("id = 1", name="single_row"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    generation: Mapped[int] = mapped_column(BigInteger, nullable=False)
    listing_generation: Mapped[int] = mapped_column(BigInteger, nullable=False)
