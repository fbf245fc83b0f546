"""Which texts a model reads (CONTRACT 14), and the path each finding names.

Three sources, judged by the same rules (`rules.model_text.judge`):
- the manifest's texts: `name`, `description`, `descriptionZh`, every string under
  `contributes`, the `config` items' labels and descriptions (a manifest JSON path);
- the package's Markdown and text files: `SKILL.md`, `*.md`, `*.txt`, `prompts/**`
  (`file:<path>:<line>`);
- once inspection ends, the server's `instructions` and each tool's and prompt's
  description, with the descriptions inside `inputSchema` (`tool:<name>.description`,
  `tool:<name>.inputSchema.<property>`, `prompt:<name>.description`, `instructions`).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from marketplace_rules.findings import item_path, join_path
from marketplace_rules.limits import KIB, MIB

MODEL_TEXT_FILE_MAX_BYTES: Final = 1 * MIB
"""Bytes of one Markdown or text file the rules read; the rest of a larger file is not
judged (a model is not given megabytes of one file either)."""
MODEL_TEXT_PACKAGE_MAX_BYTES: Final = 4 * MIB
"""Bytes of all of a package's Markdown and text files the rules read together."""
MODEL_TEXT_FILES_MAX: Final = 200
"""Markdown and text files of one package judged; a package with more is judged on the
first ones in archive order."""
TEXT_SUFFIXES: Final = (".md", ".markdown", ".mdx", ".txt")
PROMPTS_FOLDER: Final = "prompts"
SCHEMA_DEPTH_MAX: Final = 8
"""Nesting of `inputSchema` properties followed for their descriptions."""
SCHEMA_TEXTS_MAX: Final = 200
"""Descriptions read from one tool's `inputSchema`."""

_MANIFEST_TEXT_KEYS: Final = ("name", "nameZh", "description", "descriptionZh")
_CONFIG_TEXT_KEYS: Final = ("label", "description")
_CONTRIBUTES_STRINGS_MAX: Final = 2_000


@dataclass(frozen=True, slots=True)
class ModelText:
    """One text a model reads: where it is (the finding's path) and what it says.

    line_numbers: a file's text, whose findings name `file:<path>:<line>`."""

    path: str
    text: str
    line_numbers: bool = False


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What the rules know of the server a text belongs to.

    own_tools: the names of the server's tools (a reference to one of them from another
    tool's text is a reference to another tool); read_only: the tool says `readOnlyHint`;
    observed_effects: what inspection saw the server do that no read-only tool would
    (connections, files written), for the annotation's contradiction."""

    own_tools: frozenset[str] = frozenset()
    tool_name: str | None = None
    read_only: bool = False
    observed_effects: tuple[str, ...] = ()


NO_CONTEXT: Final = ToolContext()


def is_model_text_file(path: str) -> bool:
    """A package file the rules read: Markdown and text files, and all of `prompts/`."""
    lowered = path.lower()
    if lowered.endswith(TEXT_SUFFIXES):
        return True
    parts = lowered.split("/")
    return len(parts) > 1 and PROMPTS_FOLDER in parts[:-1]


def manifest_texts(manifest: Mapping[str, Any], prefix: str = "") -> Iterator[ModelText]:
    """The manifest's texts a model reads, each at its JSON path (prefix: where the
    manifest sits in its document, `package` for a scenario's)."""
    for key in _MANIFEST_TEXT_KEYS:
        value = manifest.get(key)
        if isinstance(value, str) and value:
            yield ModelText(join_path(prefix, key), value)
    contributes = manifest.get("contributes")
    if isinstance(contributes, Mapping | list):
        strings = _strings(contributes, join_path(prefix, "contributes"), depth=0)
        for count, text in enumerate(strings):
            if count >= _CONTRIBUTES_STRINGS_MAX:
                break
            yield text
    config = manifest.get("config")
    if isinstance(config, list):
        for index, item in enumerate(config):
            if not isinstance(item, Mapping):
                continue
            for key in _CONFIG_TEXT_KEYS:
                value = item.get(key)
                if isinstance(value, str) and value:
                    where = join_path(item_path(join_path(prefix, "config"), index), key)
                    yield ModelText(where, value)


def _strings(value: Any, path: str, *, depth: int) -> Iterator[ModelText]:
    if depth > SCHEMA_DEPTH_MAX * 4:
        return
    if isinstance(value, str):
        if value:
            yield ModelText(path, value)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _strings(item, join_path(path, str(key)), depth=depth + 1)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, item_path(path, index), depth=depth + 1)


def file_text(path: str, data: bytes) -> ModelText:
    """A package file's bytes as the rules read them (undecodable bytes replaced)."""
    text = data[:MODEL_TEXT_FILE_MAX_BYTES].decode("utf-8", "replace")
    return ModelText(f"file:{path}", text, line_numbers=True)


@dataclass
class FileTexts:
    """Collects a package's Markdown and text files as they stream by, within the caps
    (MODEL_TEXT_FILE_MAX_BYTES a file, MODEL_TEXT_PACKAGE_MAX_BYTES and
    MODEL_TEXT_FILES_MAX a package): `wants(path)`, then `open(path)`, `feed` pieces,
    `close()`; `texts` holds the collected files."""

    texts: list[ModelText] = field(default_factory=list)
    _taken: int = 0
    _path: str | None = None
    _buffer: bytearray = field(default_factory=bytearray)

    def wants(self, path: str) -> bool:
        return (
            is_model_text_file(path)
            and len(self.texts) < MODEL_TEXT_FILES_MAX
            and self._taken < MODEL_TEXT_PACKAGE_MAX_BYTES
        )

    def open(self, path: str) -> None:
        self._path = path
        self._buffer = bytearray()

    def feed(self, piece: bytes) -> None:
        if self._path is None:
            return
        room = min(
            MODEL_TEXT_FILE_MAX_BYTES - len(self._buffer),
            MODEL_TEXT_PACKAGE_MAX_BYTES - self._taken - len(self._buffer),
        )
        if room > 0:
            self._buffer += piece[:room]

    def close(self) -> None:
        if self._path is None:
            return
        data = bytes(self._buffer)
        self._taken += len(data)
        if b"\0" not in data[: 8 * KIB]:  # a binary file named .txt is not text
            self.texts.append(file_text(self._path, data))
        self._path = None
        self._buffer = bytearray()

    def add(self, path: str, data: bytes) -> None:
        """A whole file at once (the publishing tool reads files from disk)."""
        if self.wants(path):
            self.open(path)
            self.feed(data)
            self.close()


def inspection_texts(listing: Mapping[str, Any]) -> Iterator[tuple[ModelText, ToolContext]]:
    """The texts a server offers the model, from a stored inspection report: its
    `instructions`, each tool's description and the descriptions in its `inputSchema`,
    each prompt's description; each with what the rules know of its server."""
    tools = [tool for tool in listing.get("tools") or [] if isinstance(tool, Mapping)]
    own = frozenset(str(tool.get("name")) for tool in tools if isinstance(tool.get("name"), str))
    effects = observed_effects(listing.get("observed"))
    base = ToolContext(own_tools=own, observed_effects=effects)
    server = listing.get("server")
    instructions = listing.get("instructions")
    if instructions is None and isinstance(server, Mapping):
        instructions = server.get("instructions")  # where a stored report keeps them
    if isinstance(instructions, str) and instructions:
        yield ModelText("instructions", instructions), base
    for tool in tools:
        name = str(tool.get("name") or "")
        context = ToolContext(
            own_tools=own,
            tool_name=name,
            read_only=_read_only(tool.get("annotations")),
            observed_effects=effects,
        )
        description = tool.get("description")
        if isinstance(description, str) and description:
            yield ModelText(f"tool:{name}.description", description), context
        schema = tool.get("inputSchema")
        for where, text in _schema_descriptions(schema, "", depth=0, budget=[SCHEMA_TEXTS_MAX]):
            yield ModelText(f"tool:{name}.inputSchema.{where}", text), context
    for prompt in listing.get("prompts") or []:
        if not isinstance(prompt, Mapping):
            continue
        description = prompt.get("description")
        if isinstance(description, str) and description:
            yield ModelText(f"prompt:{prompt.get('name')}.description", description), base


def observed_effects(observed: Any) -> tuple[str, ...]:
    """What a read-only server would not do, as inspection saw it (CONTRACT 13 shape)."""
    if not isinstance(observed, Mapping):
        return ()
    effects: list[str] = []
    network = observed.get("network") or []
    if network:
        hosts = [str(entry.get("host")) for entry in network if isinstance(entry, Mapping)]
        effects.append("connected to " + ", ".join(hosts[:3]))
    written = observed.get("filesWritten") or []
    if written:
        effects.append("wrote " + ", ".join(str(path) for path in written[:3]))
    return tuple(effects)


def _read_only(annotations: Any) -> bool:
    return isinstance(annotations, Mapping) and annotations.get("readOnlyHint") is True


def _schema_descriptions(
    schema: Any, path: str, *, depth: int, budget: list[int]
) -> Iterator[tuple[str, str]]:
    """(`<property>`, description) for each property of a JSON schema, nested ones as
    `a.b`, array items through their schema; at most `budget[0]` of them."""
    if depth > SCHEMA_DEPTH_MAX or not isinstance(schema, Mapping):
        return
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        for name, sub in properties.items():
            if budget[0] <= 0 or not isinstance(sub, Mapping):
                return
            where = f"{path}.{name}" if path else str(name)
            description = sub.get("description")
            if isinstance(description, str) and description:
                budget[0] -= 1
                yield where, description
            yield from _schema_descriptions(sub, where, depth=depth + 1, budget=budget)
    items = schema.get("items")
    if isinstance(items, Mapping):
        yield from _schema_descriptions(items, path, depth=depth + 1, budget=budget)


def file_path_of(path: str) -> str:
    """The package path in a `file:<path>` source path."""
    return posixpath.normpath(path.removeprefix("file:"))
