"""A rollout move posted from a page (the console's or the portal's): the form's action
and fields, checked as the API checks its body, into a call of `delivery.rollout`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from pydantic import ValidationError
from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.delivery import rollout
from marketplace.delivery.schemas import HaltIn, RolloutIn
from marketplace.models import Plugin, PluginVersion
from marketplace.publishing.audit import Trigger
from marketplace.web.forms import Form, first_problem

RolloutMove = Callable[[AsyncSession, Plugin, PluginVersion, str], Awaitable[None]]

# The page's notice after each move, by the form's action.
DONE = {"set": "rollout_set", "halt": "rollout_halted", "resume": "rollout_resumed"}
NOTICES = {
    "rollout_set": "Rollout changed.",
    "rollout_halted": "Rollout halted: nobody is offered this version now.",
    "rollout_resumed": "Rollout resumed.",
}


def rollout_move(form: Form, trigger: Trigger) -> RolloutMove:
    """The move a posted form asks for; ValueError (in words for the page) when its input
    is not what the API would take."""
    action, percent, reason = form.text("action"), form.text("percent"), form.text("reason")
    try:
        if action == "set":
            body = RolloutIn.model_validate({"percent": int(percent)})
            return lambda db, p, v, actor: rollout.set_percent(
                db, p, v, body.percent, actor_id=actor, trigger=trigger
            )
        if action == "halt":
            halt = HaltIn.model_validate({"reason": reason})
            return lambda db, p, v, actor: rollout.halt(
                db, p, v, halt.reason, actor_id=actor, trigger=trigger
            )
    except ValidationError as error:
        raise ValueError(first_problem(error, {"percent": "Percent", "reason": "Reason"})) from None
    except ValueError:
        raise ValueError("Percent must be a whole number from 1 to 100") from None
    if action == "resume":
        return lambda db, p, v, actor: rollout.resume(db, p, v, actor_id=actor, trigger=trigger)
    raise ValueError("Unknown rollout action")
