"""What one run of a server in the sandbox found: the shapes the runner hands to the job.

The runner (`runner.run_inspection`) fills a `RunReport`; the job (`service`) stores it with
the version, works out the undeclared permissions and the findings. Lists are as CONTRACT 13
names them, in JSON form (camelCase keys), so they are stored and served unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

# Values the contract fixes.
PLACEHOLDER_VALUE = "inspection-placeholder"
SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"
ERROR_MAX_CHARS = 500


@dataclass(frozen=True)
class Limits:
    """What one inspection may use. `seconds` bounds the whole run, start to kill."""

    seconds: float = 20.0
    memory_bytes: int = 1024 * 1024 * 1024
    processes: int = 64
    # Bytes the server may write to stdout and stderr before the run is stopped as a flood.
    output_bytes: int = 8 * 1024 * 1024
    # Distinct observations kept per category; a server that tries a million paths is
    # reported with the first ones and stopped from growing the report.
    observations_per_category: int = 200
    # After the listings, the server keeps running this long (within `seconds`) so that
    # what it does right after answering is observed too.
    settle_seconds: float = 0.5


@dataclass
class Observed:
    """Attempts of the whole process tree, successful or not (CONTRACT 13)."""

    network: list[dict[str, Any]] = field(default_factory=list)  # {host: str, port: int|None}
    files_written: list[str] = field(default_factory=list)
    processes: list[str] = field(default_factory=list)
    sensitive_reads: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "network": self.network,
            "filesWritten": self.files_written,
            "processes": self.processes,
            "sensitiveReads": self.sensitive_reads,
        }


@dataclass
class RunReport:
    """One run's result. `status` is `done` when the server answered initialize and the
    listings (a listing the server does not offer is an empty list), else `failed` with a
    one-line `error` (at most ERROR_MAX_CHARS, the end of stderr included). What was
    observed before a failure is kept: a server that crashes after trying the network still
    tried it."""

    status: Literal["done", "failed"]
    error: str | None = None
    server: dict[str, Any] | None = None  # {name, version, instructions}
    # [{name, description, inputSchema, annotations, fingerprint}] as sent on the wire.
    tools: list[dict[str, Any]] = field(default_factory=list)
    prompts: list[dict[str, Any]] = field(
        default_factory=list
    )  # [{name, description, arguments, fingerprint}]
    resources: list[dict[str, Any]] = field(
        default_factory=list
    )  # [{uri, name, description, mimeType}]
    observed: Observed = field(default_factory=Observed)


@dataclass(frozen=True)
class Target:
    """The server to run: the unpacked package (read-only in the sandbox, the working
    folder), the manifest's `mcp` declaration and the keys of its required config items."""

    package_dir: Path
    mcp: dict[str, Any]
    required_config_keys: tuple[str, ...] = ()
    # Host paths whose reading is reported as a sensitive read (the service's data folder,
    # its keys), besides the contract's list; the sandbox never binds them anyway.
    protected_paths: tuple[Path, ...] = ()
