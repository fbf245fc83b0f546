"""Settings.gc_freeze_at_start: what the start allocated leaves the collector's sight once
(`marketplace serve` turns it on); off, nothing is frozen (a test process makes many apps)."""

from __future__ import annotations

import pytest

from marketplace import app as app_module
from marketplace.app import create_app
from marketplace.config import Settings


@pytest.mark.parametrize("freeze", [True, False])
async def test_the_start_freezes_the_heap_only_when_asked(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, freeze: bool
) -> None:
    frozen: list[bool] = []
    monkeypatch.setattr(app_module.gc, "freeze", lambda: frozen.append(True))
    application = create_app(settings.model_copy(update={"gc_freeze_at_start": freeze}))
    async with application.router.lifespan_context(application):  # its end shuts down
        assert frozen == ([True] if freeze else [])
    assert frozen == ([True] if freeze else [])  # once, at the start


def test_the_setting_is_off_unless_serve_or_the_environment_turns_it_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("MARKETPLACE_GC_FREEZE_AT_START", raising=False)
    assert Settings().gc_freeze_at_start is False
    monkeypatch.setenv("MARKETPLACE_GC_FREEZE_AT_START", "true")
    assert Settings().gc_freeze_at_start is True
