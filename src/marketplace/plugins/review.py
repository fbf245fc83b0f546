"""The review moves only plugins have: the plugin itself is reviewed (seed part 3,
CONTRACT 5); its versions follow the core's rules (marketplace.publishing.review)."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from marketplace.models import Channel, Plugin, ReviewStatus
from marketplace.packages.manifest import version_sort_key
from marketplace.plugins.kind import PLUGINS
from marketplace.publishing import review
from marketplace.publishing.audit import Trigger, record_review
from marketplace.publishing.queries import versions_of
from marketplace.trust.keyring import Keyring


async def _decide_plugin(
    session: AsyncSession, plugin: Plugin, *, approved: bool, reviewer_id: str, note: str | None
) -> None:
    """The plugin's own move, with its audit record in the same transaction."""
    plugin.review_status = ReviewStatus.APPROVED if approved else ReviewStatus.REJECTED
    plugin.enabled = approved
    plugin.review_note = note
    plugin.reviewed_by = reviewer_id
    record_review(
        session,
        approved=approved,
        actor_id=reviewer_id,
        resource_type=PLUGINS.name,
        resource_id=plugin.id,
        trigger=Trigger.ADMIN,
        note=note,
    )
    await session.flush()


async def approve_plugin(
    session: AsyncSession,
    plugin: Plugin,
    *,
    reviewer_id: str,
    note: str | None,
    approve_pending_version: bool | None,
    keyring: Keyring,
) -> None:
    """Listed; a first publication also releases its newest pending version (`linkage`).

    Stable versions only (CONTRACT 16): the linkage gives a first publication a current
    version, which a prerelease never is; an approved prerelease is not a release either."""
    await _decide_plugin(session, plugin, approved=True, reviewer_id=reviewer_id, note=note)
    if approve_pending_version is False:
        return
    versions = [
        v for v in await versions_of(session, PLUGINS, plugin.id) if v.channel == Channel.STABLE
    ]
    if any(v.review_status == ReviewStatus.APPROVED for v in versions):
        return
    pending = [v for v in versions if v.review_status == ReviewStatus.PENDING]
    if pending:
        newest = max(pending, key=lambda v: version_sort_key(v.version))
        await review.decide(
            session,
            PLUGINS,
            plugin,
            newest,
            approved=True,
            reviewer_id=reviewer_id,
            note=note,
            keyring=keyring,
            trigger=Trigger.LINKAGE,
        )


async def reject_plugin(
    session: AsyncSession, plugin: Plugin, *, reviewer_id: str, note: str | None
) -> None:
    await _decide_plugin(session, plugin, approved=False, reviewer_id=reviewer_id, note=note)


async def resubmit(session: AsyncSession, plugin: Plugin) -> None:
    """A developer's edit of a rejected plugin sends it back to review."""
    if plugin.review_status == ReviewStatus.REJECTED:
        plugin.review_status = ReviewStatus.PENDING
        await session.flush()
