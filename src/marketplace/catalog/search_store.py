"""The search index's files on this host: opened by every process, written by one.

Tantivy keeps an index in a directory of immutable segment files that it memory-maps, so
processes that open the same directory share its pages in the operating system's cache:
memory does not grow with the number of workers. Tantivy also lets only one writer hold a
directory (a lock file, released when its process ends), which elects the process that
builds and updates the index; the others open it read-only and reload after its commits.

What the index shows travels with it: every commit carries one extra document, the meta
document, holding the catalogue generation the commit brings the index to. A reader that
reloads reads that number from the same searcher it searches with, so the number and the
documents always agree; a restarted writer reads it to catch up from the change notes
instead of rebuilding.

The directory's name holds the layout of the documents and a digest of the database URL:
another layout or another database starts from a fresh directory instead of reading files
made for something else.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import shutil
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import tantivy
from sqlalchemy.engine import make_url

log = logging.getLogger(__name__)

# Change when a document or the schema changes: the next start builds in a new directory.
LAYOUT = "layout-2"
PLUGIN_ID = "pid"  # every document's id field (catalog.search_index's schema)
META_ID = "meta:generation"  # the meta document's pid (plugin ids are UUIDs)
META_GENERATION = "generation"
META_BUILD = "build"  # a new id for every build: its generations are its own
# A reader waiting for a generation writes it here; the writer's follower reads it. One
# fixed-width number written in one call, so a read sees one whole number.
WANTED_FILE = "wanted"
_WANTED_WIDTH = 20


@dataclass(frozen=True)
class View:
    """A searcher, the generation its documents show (None: not built yet) and the id of
    the build they come from."""

    searcher: tantivy.Searcher
    generation: int | None
    build: str | None


def index_directory(root: Path, database_url: str) -> Path:
    """This database's index under `root`, named by layout and a digest of the URL (its
    password left out: changing it keeps the index)."""
    shown = make_url(database_url).render_as_string(hide_password=True)
    digest = hashlib.sha256(shown.encode()).hexdigest()
    return root / f"{LAYOUT}-{digest[:16]}"


class IndexStore:
    """One directory's index: opened on first use, its writer claimed when free."""

    def __init__(self, path: Path, make_index: Callable[[Path], tantivy.Index]) -> None:
        self.path = path
        self._make_index = make_index
        self._index: tantivy.Index | None = None
        self.writer: tantivy.IndexWriter | None = None

    @property
    def index(self) -> tantivy.Index:
        if self._index is None:
            self.path.mkdir(parents=True, exist_ok=True)
            # Opens the files another process made, or makes an empty index (two processes
            # making it at once write the same empty metadata, atomically).
            self._index = self._make_index(self.path)
        return self._index

    def claim_writer(self, heap_bytes: int) -> bool:
        """Become this directory's writer if no process is. Tantivy's arena grows as the
        documents need, up to `heap_bytes`: small commits use little of it."""
        if self.writer is not None:
            return True
        try:
            self.writer = self.index.writer(heap_bytes, 1)
        except ValueError as error:
            if "LockBusy" not in str(error):
                raise
            return False
        self._remove_stale_siblings()
        return True

    def view(self) -> View:
        """The documents of the last commit (any process's), with their generation."""
        index = self.index
        index.reload()
        searcher = index.searcher()
        return View(searcher, *read_meta(index.schema, searcher))

    def want(self, generation: int) -> bool:
        """Tell the writer a reader waits for `generation`; False if it could not be told."""
        try:
            fd = os.open(self.path / WANTED_FILE, os.O_WRONLY | os.O_CREAT, 0o644)
            try:
                os.pwrite(fd, f"{generation:0{_WANTED_WIDTH}d}".encode(), 0)
            finally:
                os.close(fd)
        except OSError:
            return False
        return True

    def clear_wanted(self) -> None:
        """Forget what readers of earlier files asked for (the writer at its start)."""
        with contextlib.suppress(OSError):
            (self.path / WANTED_FILE).unlink(missing_ok=True)

    def wanted(self) -> int | None:
        """The generation a reader last asked for, if any."""
        try:
            with (self.path / WANTED_FILE).open("rb") as file:
                return int(file.read(_WANTED_WIDTH))
        except (OSError, ValueError):
            return None

    def release(self) -> None:
        """Give up the writer (its lock), e.g. when the app shuts down."""
        writer, self.writer = self.writer, None
        if writer is not None:
            with contextlib.suppress(Exception):  # uncommitted changes are dropped
                writer.rollback()
            del writer

    def _remove_stale_siblings(self) -> None:
        """Directories of other layouts under the same root, made by an older release.
        Best effort. (Another database's directory is left alone: a host may serve two.)"""
        for sibling in self.path.parent.iterdir():
            stale = sibling.name.startswith("layout-") and not sibling.name.startswith(LAYOUT + "-")
            if stale and sibling.is_dir():
                log.info("removing stale search index %s", sibling)
                shutil.rmtree(sibling, ignore_errors=True)


def new_build() -> str:
    return uuid.uuid4().hex


def meta_document(generation: int, build: str) -> tantivy.Document:
    doc = tantivy.Document()
    doc.add_text(PLUGIN_ID, META_ID)
    doc.add_unsigned(META_GENERATION, generation)
    doc.add_text(META_BUILD, build)
    return doc


def read_meta(schema: tantivy.Schema, searcher: tantivy.Searcher) -> tuple[int | None, str | None]:
    """The generation and build id of the meta document (None, None: not built)."""
    found = searcher.search(tantivy.Query.term_query(schema, PLUGIN_ID, META_ID), limit=1)
    if not found.hits:
        return None, None
    doc = searcher.doc(found.hits[0][1])
    generation, build = doc.get_first(META_GENERATION), doc.get_first(META_BUILD)
    if generation is None or build is None:
        return None, None
    return int(generation), str(build)
