"""Under CI the sandbox must work: the inspection tests skip without it, and a run that
skipped them all would pass while testing nothing (a checkout in a 0700 folder once hid
bwrap from the sandbox's uid, and every sandbox test was skipped)."""

from __future__ import annotations

import os

import pytest

from marketplace.inspection.runner import sandbox_available


@pytest.mark.skipif(os.environ.get("CI") != "true", reason="only CI promises a sandbox")
def test_ci_machine_can_run_the_sandbox() -> None:
    assert sandbox_available() is None
