"""The Approve / Reject form every review page shares: one Note, two buttons."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from marketplace.web.forms import Form, first_problem

NOTE_REQUIRED = "A rejection needs a note: tell the developer what to change."
CHOOSE = "Choose Approve or Reject."
LABELS = {"reviewNote": "Note", "review_note": "Note"}


@dataclass(frozen=True)
class Decision:
    approved: bool
    note: str | None


class DecisionRefused(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def decision_of(form: Form, model: type[BaseModel], **extra: Any) -> tuple[Decision, BaseModel]:
    """The decision, checked by the API's own body model (the same note rules).

    The console asks more than the API in one way: a rejection always carries a note.
    """
    choice = form.text("decision")
    if choice not in ("approve", "reject"):
        raise DecisionRefused(CHOOSE)
    approved = choice == "approve"
    note = form.text("note") or None
    if not approved and note is None:
        raise DecisionRefused(NOTE_REQUIRED)
    try:
        body = model.model_validate({"approved": approved, "reviewNote": note, **extra})
    except ValidationError as error:
        raise DecisionRefused(first_problem(error, LABELS)) from None
    return Decision(approved, note), body
