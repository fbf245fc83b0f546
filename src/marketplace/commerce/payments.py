"""The payment-provider interface (CONTRACT 7): settle at once, or leave a purchase pending.

A provider sees a purchase row that already exists (its id is the reference a gateway
echoes back in its confirmation) and answers paid, pending or failed. A gateway that
confirms later calls `marketplace.commerce.purchases.confirm_purchase` from its webhook
handler, which belongs with that gateway's integration (with its signature checks).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from decimal import Decimal
from typing import Annotated, Protocol

from fastapi import Depends, Request


class ChargeStatus(enum.StrEnum):
    PAID = "paid"
    PENDING = "pending"
    FAILED = "failed"


@dataclass(frozen=True)
class ChargeRequest:
    purchase_id: str
    user_id: str
    plugin_id: str
    plugin_key: str
    amount: Decimal  # yuan, exactly as the purchase row holds it
    idempotency_key: str | None


@dataclass(frozen=True)
class ChargeResult:
    status: ChargeStatus
    reference: str | None = None  # the gateway's id of the charge, stored as provider_ref


class PaymentProvider(Protocol):
    name: str

    async def charge(self, request: ChargeRequest) -> ChargeResult:
        """Take the payment, or start taking it; called at most once per purchase row."""
        ...


class BuiltinProvider:
    """Self-hosted and internal marketplaces: every purchase settles at once, no money moves."""

    name = "builtin"

    async def charge(self, request: ChargeRequest) -> ChargeResult:
        return ChargeResult(ChargeStatus.PAID, reference=f"builtin-{request.purchase_id}")


_BUILTIN = BuiltinProvider()


async def payment_provider(request: Request) -> PaymentProvider:
    """`app.state.payment_provider` when the deployment installs one, else the built-in."""
    provider: PaymentProvider | None = getattr(request.app.state, "payment_provider", None)
    return provider if provider is not None else _BUILTIN


PaymentProviderDep = Annotated[PaymentProvider, Depends(payment_provider)]
