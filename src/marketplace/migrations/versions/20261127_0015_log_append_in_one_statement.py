"""transparency log: a decision's append in one statement (issue 27's 1 ms target)

The append read the locked head, then wrote the entry, the completed nodes and the head: four
statements on SQLite (each a hop to the driver's thread), two round trips on PostgreSQL. Now
the database extends the tree itself:

- PostgreSQL: `marketplace_log_append(action, subject, prefix, suffix)` locks the head, writes
  the leaf `prefix || index || suffix`, its completed nodes (SHA-256 in the server) and the
  head, and returns the index; NULL while the backfill is pending.
- SQLite: a trigger on `log_entries` extends the tree when the entry inserted is the head's
  next index (the bulk path advances the head first, so its rows never fire it). It calls the
  SHA-256 functions `db` registers on each connection (`kit.log_sql`).

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-27
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SQLITE_TRIGGER = """
CREATE TRIGGER log_entries_extend_tree AFTER INSERT ON log_entries
WHEN NEW.log_index = (SELECT size FROM log_head WHERE id = 1)
BEGIN
  INSERT INTO log_nodes (node_id, hash)
    SELECT json_extract(node.value, '$[0]'), marketplace_unhex(json_extract(node.value, '$[1]'))
    FROM log_head, json_each(marketplace_log_nodes(log_head.size, log_head.compact, NEW.leaf))
      AS node
    WHERE log_head.id = 1;
  UPDATE log_head SET size = size + 1, compact = marketplace_log_compact(size, compact, NEW.leaf)
    WHERE id = 1;
END
"""

# RFC 6962 as marketplace_rules.merkle: leaf SHA-256(0x00 || entry), node SHA-256(0x01 || l || r);
# a node's id is (level << 40) | index; the compact range is its hashes, biggest first.
POSTGRES_FUNCTION = r"""
CREATE FUNCTION marketplace_log_append(
  p_action text, p_subject text, p_prefix bytea, p_suffix bytea
) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  head_size bigint;
  head_compact bytea;
  pending boolean;
  leaf bytea;
  current_hash bytea;
  level integer := 0;
  kept integer;
BEGIN
  SELECT size, compact, backfill_pending INTO head_size, head_compact, pending
    FROM log_head WHERE id = 1 FOR UPDATE;
  IF pending THEN
    RETURN NULL;
  END IF;
  leaf := p_prefix || convert_to(head_size::text, 'UTF8') || p_suffix;
  INSERT INTO log_entries (log_index, action, subject, leaf)
    VALUES (head_size, p_action, p_subject, leaf);
  current_hash := sha256('\x00'::bytea || leaf);
  INSERT INTO log_nodes (node_id, hash) VALUES (head_size, current_hash);
  WHILE (head_size >> level) & 1 = 1 LOOP
    kept := length(head_compact) - 32;
    current_hash := sha256('\x01'::bytea || substring(head_compact FROM kept + 1) || current_hash);
    head_compact := substring(head_compact FROM 1 FOR kept);
    level := level + 1;
    INSERT INTO log_nodes (node_id, hash)
      VALUES ((level::bigint << 40) | (head_size >> level), current_hash);
  END LOOP;
  UPDATE log_head SET size = head_size + 1, compact = head_compact || current_hash
    WHERE id = 1;
  RETURN head_size;
END $$
"""


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute(SQLITE_TRIGGER)
    else:
        op.execute(POSTGRES_FUNCTION)


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute("DROP TRIGGER log_entries_extend_tree")
    else:
        op.execute("DROP FUNCTION marketplace_log_append(text, text, bytea, bytea)")
