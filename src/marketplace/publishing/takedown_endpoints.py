"""What the version takedown routes (CONTRACT 11) share: the body and the description.
Each kind declares its own routes, and its version dependencies in its `lookup`.

Order of checks (CONTRACT 1), by construction: the token and role, then (developer routes)
a verified identity, the item's 404 and its ownership, then the version's 404, all in
dependencies, so they come before the body's 400; the state's 409 comes last.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from marketplace.kit.schemas import InputModel, RequiredText
from marketplace.publishing.takedown import REASON_MAX_CHARS


class TakedownIn(InputModel):
    reason: Annotated[RequiredText, Field(min_length=1, max_length=REASON_MAX_CHARS)]


TAKEDOWN_DESCRIPTION = (
    "Withdraw an approved version, with a reason (1-2000 characters): reviewStatus "
    "taken_down, reviewNote the reason, never current again. If it was current, the highest "
    "remaining approved version becomes current in the same transaction (none: latestVersion "
    "null, nothing to download). The version joins the signed revocation list "
    "(GET /api/v1/plugins/revocations). A version that is not approved is 409 INVALID_STATE."
)
OWN_TAKEDOWN_DESCRIPTION = (
    TAKEDOWN_DESCRIPTION + " Only the owner may; the audit record's trigger is developer."
)
