"""The transparency log's entry (CONTRACT 15), as the service writes it and clients read it:
the canonical JSON of these fields, those that do not apply null."""

from __future__ import annotations

# Every field but `index`, whose value is the entry's position.
ENTRY_FIELDS = ("action", "kind", "key", "version", "distribution", "sha256", "size", "keyId", "at")
ACTIONS = ("approve", "takedown", "key-add", "key-retire")
