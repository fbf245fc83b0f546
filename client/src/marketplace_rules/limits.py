"""Sizes and lengths both sides enforce. Sizes are binary (CONTRACT: 256 KB = 256 KiB)."""

from __future__ import annotations

KIB = 1024
MIB = 1024 * KIB
GIB = 1024 * MIB

ICON_MAX_BYTES = 256 * KIB
"""Icon uploads and a package's own icon file (seed: "at most 256 KB"); equal passes."""

PLUGIN_PACKAGE_MAX_MIB = 100
"""Default of MARKETPLACE_PLUGIN_PACKAGE_MAX_MB."""
SCENARIO_PACKAGE_MAX_MIB = 50
"""Default of MARKETPLACE_SCENARIO_PACKAGE_MAX_MB."""

ARCHIVE_MAX_MEMBERS = 10_000
ARCHIVE_MAX_UNPACKED_BYTES = GIB
UNPACKED_PER_PACKAGE_BYTES = 10
"""A package may unpack to at most this many times the upload limit (and the cap above)."""
MANIFEST_MAX_BYTES = MIB
MANIFEST_MAX_DEPTH = 32
"""Objects and arrays nest at most this deep in a manifest (tool schemas need a dozen);
deeper documents break JSON encoders and validators that recurse."""

PLUGIN_KEY_MIN_LENGTH = 3
PLUGIN_KEY_MAX_LENGTH = 64
VERSION_MAX_LENGTH = 128

TEXT_FINDINGS_MAX = 20
"""Hidden-character findings listed one by one; the rest are counted in one more finding."""

SYMLINK_HOPS_MAX = 40
"""Links followed inside a package before giving up, as the kernel's ELOOP limit."""

FINDINGS_MAX = 200
"""Findings stored on a version (the last one counts the rest), so a hostile package
cannot grow the row without bound (DESIGN invariant 8)."""
FINDING_MESSAGE_MAX = 500
FINDING_PATH_MAX = 300
"""Characters of one stored finding's message and path; longer ones are cut with "..."."""

LARGE_FILE_BYTES = 10 * MIB
"""A single package file over this size is pointed out to the reviewer."""
PERMISSIONS_COMPARED_MAX = 200
"""Permissions of each version matched against each other for widening; past these, new
permissions are still reported, by exact comparison only."""
