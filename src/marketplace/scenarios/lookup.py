"""The scenario dependencies: ownership and the order of checks live in the core's lookup."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends

from marketplace.models import Scenario
from marketplace.publishing.lookup import for_admin, owned_for_read, owned_for_write
from marketplace.scenarios.kind import SCENARIOS

PARAM = "scenario_id"

OwnedScenario = Annotated[Scenario, Depends(owned_for_read(SCENARIOS, PARAM))]
OwnedScenarioForWrite = Annotated[Scenario, Depends(owned_for_write(SCENARIOS, PARAM))]
# Streamed uploads: checked without a lock; the upload's own transaction locks the row.
OwnedScenarioForUpload = Annotated[Scenario, Depends(owned_for_write(SCENARIOS, PARAM, lock=False))]
AdminScenario = Annotated[Scenario, Depends(for_admin(SCENARIOS, PARAM))]
