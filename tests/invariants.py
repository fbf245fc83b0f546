"""DESIGN.md's invariants, checked on a whole database and blob store at once: after a fault
(a worker killed mid-upload and restarted) and at the end of the end-to-end session."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Connection, text

# (versions table, parent column, items table) of every reviewed kind.
KINDS = (
    ("plugin_versions", "plugin_id", "plugins"),
    ("scenario_versions", "scenario_id", "scenarios"),
)


def _rows(connection: Connection, sql: str) -> list[tuple[object, ...]]:
    return [tuple(row) for row in connection.execute(text(sql)).all()]


def broken_invariants(blob_keys: set[str]) -> Callable[[Connection], list[str]]:
    """Each broken invariant as one line; [] when all hold. `blob_keys` are the stored blobs."""

    def check(connection: Connection) -> list[str]:
        broken: list[str] = []
        for versions, parent, items in KINDS:
            # 1. At most one current version per item, and latestVersion names it.
            for item, count in _rows(
                connection,
                f"SELECT {parent}, COUNT(*) FROM {versions} WHERE is_latest "  # noqa: S608
                f"GROUP BY {parent} HAVING COUNT(*) > 1",
            ):
                broken.append(f"1: {items} {item} has {count} current versions")
            for item, latest, current in _rows(
                connection,
                f"SELECT i.id, i.latest_version, v.version FROM {items} i "  # noqa: S608
                f"JOIN {versions} v ON v.{parent} = i.id AND v.is_latest "
                "WHERE i.latest_version IS NULL OR i.latest_version <> v.version",
            ):
                broken.append(f"1: {items} {item} says {latest}, its current version is {current}")
            # 2. (item, version) unique.
            for item, version, count in _rows(
                connection,
                f"SELECT {parent}, version, COUNT(*) FROM {versions} "  # noqa: S608
                f"GROUP BY {parent}, version HAVING COUNT(*) > 1",
            ):
                broken.append(f"2: {items} {item} has {count} rows of version {version}")
            # 3. Never a row pointing at a missing blob.
            for version_id, key in _rows(
                connection,
                f"SELECT id, blob_key FROM {versions} WHERE blob_key IS NOT NULL",  # noqa: S608
            ):
                if key not in blob_keys:
                    broken.append(f"3: {versions} {version_id} points at missing blob {key}")
            # 6. Every decided version has its review's audit record.
            for (version_id,) in _rows(
                connection,
                f"SELECT v.id FROM {versions} v WHERE v.review_status IN "  # noqa: S608
                "('approved', 'rejected') AND NOT EXISTS (SELECT 1 FROM audit_logs a "
                "WHERE a.resource_id = v.id AND a.action IN ('REVIEW_APPROVE', 'REVIEW_REJECT'))",
            ):
                broken.append(f"6: {versions} {version_id} was decided without an audit record")
            # 10. An approved version has its signed release; a taken-down one is in the
            # revocation list.
            for (version_id,) in _rows(
                connection,
                f"SELECT id FROM {versions} WHERE review_status = 'approved' "  # noqa: S608
                "AND (release IS NULL OR CAST(release AS TEXT) = 'null')",
            ):
                broken.append(f"10: {versions} {version_id} is approved without a release")
            for (version_id,) in _rows(
                connection,
                f"SELECT v.id FROM {versions} v WHERE v.review_status = 'taken_down' "  # noqa: S608
                "AND NOT EXISTS (SELECT 1 FROM revocations r WHERE r.version_id = v.id)",
            ):
                broken.append(f"10: {versions} {version_id} is taken down but not revoked")
        # 11. The listed-plugin counts the triggers keep (browse totals) are the real ones.
        kept = {
            (category, kind, bool(free)): int(listed)
            for category, kind, free, listed in _rows(
                connection,
                "SELECT category, type, is_free, listed FROM catalog_listing_counts",
            )
            if int(listed) != 0
        }
        real = {
            (category, kind, bool(free)): int(count)
            for category, kind, free, count in _rows(
                connection,
                "SELECT category, type, is_free, COUNT(*) FROM plugins "
                "WHERE review_status = 'approved' AND enabled GROUP BY category, type, is_free",
            )
        }
        for bucket in sorted(set(kept) | set(real), key=str):
            if kept.get(bucket, 0) != real.get(bucket, 0):
                broken.append(
                    f"11: {bucket} counts {kept.get(bucket, 0)} listed plugins, "
                    f"there are {real.get(bucket, 0)}"
                )
        # 12. SQLite: each plugin's search rowid row carries its listing facets (0011).
        if connection.dialect.name == "sqlite":
            for (plugin_id,) in _rows(
                connection,
                "SELECT p.id FROM plugins p LEFT JOIN plugin_search_rowids r "
                "ON r.plugin_id = p.id WHERE r.plugin_id IS NULL "
                "OR r.listed != (p.review_status = 'approved' AND p.enabled) "
                "OR r.category IS NOT p.category OR r.type IS NOT p.type "
                "OR r.is_free IS NOT p.is_free",
            ):
                broken.append(f"12: plugin {plugin_id} has other search facets than its row")
        return broken

    return check
