"""The transparency log of a live market, for the live tests of the monitor and the install
client (CONTRACT 15): a market on the run's database, the log's tables changed behind the
service's back as someone with database rights would, and a proxy in front of the service
that shows its clients another log.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import httpx
from sqlalchemy import Connection, text

from marketplace.kit.log_sql import node_id
from marketplace.trust.keyring import KEYRING_FILE, Keyring, SigningKey
from marketplace_rules.canonical import b64decode, b64encode, canonical_json
from marketplace_rules.merkle import (
    CompactRange,
    consistency_ranges,
    inclusion_ranges,
    leaf_hash,
    node_hash,
    split_point,
)
from tests.dbsetup import postgres_admin_url
from tests.e2e.market import Market, running_market, write_plugin
from tests.e2e.topology import EMBEDDED, scaled_out, scaled_out_wanted
from tests.helpers import ok
from tests.migrations import run_now

LOG = "/api/v1/log"
CHECKPOINT = f"{LOG}/checkpoint"
ENTRIES = f"{LOG}/entries"
INCLUSION = f"{LOG}/proof/inclusion"
CONSISTENCY = f"{LOG}/proof/consistency"
IMMUTABLE_TABLES = ("log_entries", "log_nodes")


# --- the market ---------------------------------------------------------------------------


@contextmanager
def log_market(root: Path) -> Iterator[Market]:
    """A live market on the run's database: the embedded default (SQLite) on the SQLite
    run, the scaled-out topology (PostgreSQL, four workers) on the PostgreSQL run. Whatever
    the tests did to its log, they put it back: the invariants hold at the end."""
    with ExitStack() as stack:
        topology = stack.enter_context(scaled_out()) if scaled_out_wanted() else EMBEDDED
        market = stack.enter_context(running_market(root, topology))
        run_database = "postgresql" if postgres_admin_url() else "sqlite"
        assert market.database_url.startswith(run_database), market.database_url
        yield market
        assert market.broken_invariants() == []


def publish(market: Market, parent: Path, key: str, version: str) -> str:
    """An administrator's publish (approved at once: one approval entry); the version id."""
    folder = write_plugin(parent, key, version=version, folder=f"{key}-{version}")
    result = market.as_admin("publish", str(folder))
    assert result.returncode == 0, result.stderr
    version_id: str = market.version(key, version)["id"]
    return version_id


def client_env(market: Market, config: Path) -> dict[str, str]:
    """The CLI's environment with a configuration folder of its own (pins, checkpoints)."""
    return market.client_env(MARKETPLACE_CONFIG_DIR=str(config))


def monitor(market: Market, backend: str, config: Path) -> subprocess.CompletedProcess[str]:
    """`marketplace log verify --backend BACKEND`, with its own configuration folder."""
    return market.cli("log", "verify", "--backend", backend, env=client_env(market, config))


def stored_checkpoints(config: Path) -> bytes | None:
    """The monitor's memory of the log, byte for byte (None before its first store)."""
    path = config / "log-checkpoints.json"
    return path.read_bytes() if path.exists() else None


def stored_checkpoint(config: Path, backend: str) -> dict[str, Any]:
    document = json.loads((config / "log-checkpoints.json").read_text())
    found: dict[str, Any] = document["backends"][backend]
    return found


def served_checkpoint(url: str) -> dict[str, Any]:
    data: dict[str, Any] = ok(httpx.get(url + CHECKPOINT))
    return data


def served_entries(url: str, size: int) -> list[bytes]:
    """The exact leaf bytes of the first `size` entries, as the service serves them."""
    leaves: list[bytes] = []
    for start in range(0, size, 1000):
        end = min(size, start + 1000)
        items = ok(httpx.get(url + ENTRIES, params={"start": start, "end": end}))["items"]
        assert [item["index"] for item in items] == list(range(start, end))
        leaves += [b64decode(item["entry"]) for item in items]
    return leaves


def service_signing_key(market: Market) -> SigningKey:
    """The key the service signs with, from its keyring: the setting in the scaled-out
    topology, `signing-keys.json` in the data folder otherwise."""
    inline = market.topology.env.get("MARKETPLACE_SIGNING_KEYS")
    if inline:
        return Keyring(inline=inline).signing_key()
    return Keyring(path=market.server.data_dir / KEYRING_FILE).signing_key()


# --- the log's tables, changed behind the service's back -----------------------------------


@dataclass(frozen=True)
class LogRow:
    action: str
    subject: str
    entry: dict[str, Any]  # the leaf's JSON; `index` is set from the row's place


@dataclass(frozen=True)
class LogTables:
    """Every row of the log's three tables, as they were."""

    entries: list[tuple[int, str, str, bytes]]
    nodes: list[tuple[int, bytes]]
    head: tuple[int, bytes]

    def rows(self) -> list[LogRow]:
        return [
            LogRow(action, subject, json.loads(leaf)) for _, action, subject, leaf in self.entries
        ]


def _read(connection: Connection) -> LogTables:
    entries = connection.execute(
        text("SELECT log_index, action, subject, leaf FROM log_entries ORDER BY log_index")
    ).all()
    nodes = connection.execute(text("SELECT node_id, hash FROM log_nodes ORDER BY node_id")).all()
    head = connection.execute(text("SELECT size, compact FROM log_head WHERE id = 1")).one()
    return LogTables(
        [(int(i), str(a), str(s), bytes(leaf)) for i, a, s, leaf in entries],
        [(int(n), bytes(h)) for n, h in nodes],
        (int(head[0]), bytes(head[1])),
    )


def read_log(url: str) -> LogTables:
    return run_now(url, _read)


@contextmanager
def append_only_off(connection: Connection) -> Iterator[None]:
    """The log's append-only triggers out of the way for this transaction, as someone with
    the database's rights would: on SQLite dropped and created again from their own SQL, on
    PostgreSQL disabled and enabled again."""
    if connection.dialect.name == "sqlite":
        triggers = connection.execute(
            text(
                "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' "
                "AND tbl_name IN ('log_entries', 'log_nodes')"
            )
        ).all()
        # Refuse UPDATE, DELETE and a REPLACE-ing INSERT, on both tables; extend the tree.
        assert len(triggers) == 7, triggers
        for name, _ in triggers:
            connection.execute(text(f'DROP TRIGGER "{name}"'))
        yield
        for _, sql in triggers:
            connection.execute(text(sql))
        return
    found = connection.execute(
        text(
            "SELECT c.relname, t.tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
            "WHERE c.relname IN ('log_entries', 'log_nodes') AND NOT t.tgisinternal"
        )
    ).all()
    assert sorted(table for table, _ in found) == sorted(IMMUTABLE_TABLES), found
    for table, trigger in found:
        connection.execute(text(f'ALTER TABLE {table} DISABLE TRIGGER "{trigger}"'))
    yield
    for table, trigger in found:
        connection.execute(text(f'ALTER TABLE {table} ENABLE TRIGGER "{trigger}"'))


def _write_tables(connection: Connection, tables: LogTables) -> None:
    with append_only_off(connection):
        connection.execute(text("DELETE FROM log_entries"))
        connection.execute(text("DELETE FROM log_nodes"))
        if tables.entries:
            connection.execute(
                text(
                    "INSERT INTO log_entries (log_index, action, subject, leaf) "
                    "VALUES (:i, :a, :s, :leaf)"
                ),
                [{"i": i, "a": a, "s": s, "leaf": leaf} for i, a, s, leaf in tables.entries],
            )
        if tables.nodes:
            connection.execute(
                text("INSERT INTO log_nodes (node_id, hash) VALUES (:n, :h)"),
                [{"n": n, "h": h} for n, h in tables.nodes],
            )
    size, compact = tables.head
    connection.execute(
        text("UPDATE log_head SET size = :size, compact = :compact WHERE id = 1"),
        {"size": size, "compact": compact},
    )


def consistent_tables(rows: list[LogRow]) -> LogTables:
    """Entries numbered from 0 in this order, with the tree the service itself would have
    built over them: every perfect subtree and the head (size and compact range)."""
    compact = CompactRange()
    entries: list[tuple[int, str, str, bytes]] = []
    nodes: list[tuple[int, bytes]] = []
    for index, row in enumerate(rows):
        leaf = canonical_json({**row.entry, "index": index})
        entries.append((index, row.action, row.subject, leaf))
        nodes += [(node_id(subtree), h) for subtree, h in compact.append(leaf_hash(leaf))]
    return LogTables(entries, nodes, (compact.size, compact.to_bytes()))


def rewrite_log(url: str, rows: list[LogRow]) -> None:
    """Replace the whole log with `rows`, renumbered, over a tree recomputed to fit: the
    service then signs a checkpoint of this history, consistent in itself."""
    tables = consistent_tables(rows)
    run_now(url, lambda connection: _write_tables(connection, tables))


def write_rows(url: str, statement: str, **params: Any) -> None:
    """One statement on the log's tables with the triggers out of the way (the tree left
    as it was)."""

    def run(connection: Connection) -> None:
        with append_only_off(connection):
            connection.execute(text(statement), params)

    run_now(url, run)


@contextmanager
def tampered_log(market: Market) -> Iterator[LogTables]:
    """Yields the log's tables as they are; afterwards every row is put back as it was (no
    decision may be made meanwhile: its entry would go too)."""
    url = market.database_url
    before = read_log(url)
    try:
        yield before
    finally:
        run_now(url, lambda connection: _write_tables(connection, before))
        assert read_log(url) == before


# --- another log, as a proxy shows it -------------------------------------------------------


def tree_hash(leaves: list[bytes]) -> bytes:
    """RFC 6962's Merkle Tree Hash of these leaf hashes, by its recursive definition."""
    if not leaves:
        return hashlib.sha256(b"").digest()
    if len(leaves) == 1:
        return leaves[0]
    k = split_point(len(leaves))
    return node_hash(tree_hash(leaves[:k]), tree_hash(leaves[k:]))


@dataclass(frozen=True)
class ForgedLog:
    """A log of the service's origin whose checkpoint, entries and proofs are made here and
    signed with `key`: a view the service could show one client and not another."""

    origin: str
    entries: list[bytes]
    key: SigningKey

    @property
    def hashes(self) -> list[bytes]:
        return [leaf_hash(entry) for entry in self.entries]

    def checkpoint(self, key_id: str | None = None) -> dict[str, Any]:
        size = len(self.entries)
        root = b64encode(tree_hash(self.hashes))
        body = f"{self.origin}\n{size}\n{root}\n".encode()
        return {
            "origin": self.origin,
            "treeSize": size,
            "rootHash": root,
            "keyId": key_id or self.key.key_id,
            "signature": b64encode(self.key.private.sign(body)),
        }

    def items(self, start: int, end: int) -> dict[str, Any]:
        return {
            "items": [{"index": i, "entry": b64encode(self.entries[i])} for i in range(start, end)]
        }

    def inclusion(self, index: int, size: int) -> list[str]:
        hashes = self.hashes
        return [b64encode(tree_hash(hashes[s:e])) for s, e in inclusion_ranges(index, size)]

    def consistency(self, first: int, second: int) -> list[str]:
        hashes = self.hashes
        return [b64encode(tree_hash(hashes[s:e])) for s, e in consistency_ranges(first, second)]

    def answer(self, call: Call) -> httpx.Response | None:
        """This log's checkpoint, entries and proofs; None for every other path."""
        params = {name: int(value) for name, value in call.params.items() if value.isdigit()}
        if call.path == CHECKPOINT:
            return envelope(self.checkpoint())
        if call.path == ENTRIES:
            return envelope(self.items(params["start"], params["end"]))
        if call.path == INCLUSION:
            index, size = params["index"], params["treeSize"]
            return envelope(
                {"index": index, "treeSize": size, "hashes": self.inclusion(index, size)}
            )
        if call.path == CONSISTENCY:
            first, second = params["first"], params["second"]
            return envelope(
                {"first": first, "second": second, "hashes": self.consistency(first, second)}
            )
        return None


def envelope(data: Any) -> httpx.Response:
    return httpx.Response(200, json={"success": True, "data": data})


@dataclass(frozen=True)
class Call:
    """A request the proxy received; `forward()` is the service's own answer to it."""

    method: str
    path: str
    params: Mapping[str, str]
    forward: Callable[[], httpx.Response]

    def forwarded_data(self) -> Any:
        """The `data` of the service's answer (which must be a success)."""
        return ok(self.forward())


Answer = Callable[[Call], httpx.Response | None]
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "transfer-encoding",
        "content-encoding",
        "content-length",
        "host",
        "date",
        "server",
    }
)


class LogProxy:
    """An HTTP server in front of the live service: every request is forwarded, except those
    `answer` (set by a test; None: none) answers itself."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.answer: Answer | None = None
        self.seen: list[tuple[str, str]] = []
        self._http = httpx.Client(base_url=upstream, timeout=60)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                proxy._serve(self)

            do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_GET

            def log_message(self, format: str, *args: Any) -> None:
                pass  # the test's output is not the place for an access log

        return Handler

    def _serve(self, handler: BaseHTTPRequestHandler) -> None:
        parts = urlsplit(handler.path)
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else b""
        headers = {k: v for k, v in handler.headers.items() if k.lower() not in HOP_BY_HOP}

        def forward() -> httpx.Response:
            return self._http.request(
                handler.command, handler.path, headers=headers, content=body or None
            )

        call = Call(handler.command, parts.path, dict(parse_qsl(parts.query)), forward)
        self.seen.append((call.method, call.path))
        answer = self.answer
        response = (answer(call) if answer is not None else None) or forward()
        content = response.content
        handler.send_response(response.status_code)
        for name, value in response.headers.items():
            if name.lower() not in HOP_BY_HOP:
                handler.send_header(name, value)
        handler.send_header("Content-Length", str(len(content)))
        handler.end_headers()
        if handler.command != "HEAD":
            handler.wfile.write(content)

    def start(self) -> LogProxy:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._http.close()


@contextmanager
def log_proxy(upstream: str) -> Iterator[LogProxy]:
    proxy = LogProxy(upstream).start()
    try:
        yield proxy
    finally:
        proxy.stop()
