"""Settings from MARKETPLACE_* environment variables (and a .env file)."""

from __future__ import annotations

import secrets
from functools import lru_cache
from pathlib import Path

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from marketplace_rules.limits import (
    ICON_MAX_BYTES,
    KIB,
    MIB,
    PLUGIN_PACKAGE_MAX_MIB,
    SCENARIO_PACKAGE_MAX_MIB,
)

# A whole package write to the object store: connecting, the first answer, the multipart
# setup and its completion fit in the base; the bytes go at a slow but healthy link between
# the API host and the store (32 Mbit/s: a cross-region link or a busy gateway; within a
# region S3 takes 50+ MiB/s). 100 MiB packages: 10 + 25 = 35 s.
STORAGE_WRITE_BASE_SECONDS = 10.0
SLOW_STORE_LINK_BYTES_PER_SECOND = 4 * MIB


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="MARKETPLACE_", env_file=".env", extra="ignore", validate_default=True
    )

    environment: str = "development"
    data_dir: Path = Path("./data")
    database_url: str = ""
    storage_url: str = ""
    redis_url: str | None = None
    # Redis holds only shared rate-limit counters: a slow one must not hold requests.
    redis_timeout_seconds: float = Field(default=0.5, gt=0, le=30)
    # After a Redis error, counters stay in the process for this long before Redis is
    # tried again, so an outage costs one timeout per process per period, not per request.
    redis_retry_seconds: float = Field(default=5.0, ge=0, le=300)
    # Keys of this deployment in a Redis that others may share.
    redis_key_prefix: str = Field(default="mkt", pattern=r"^[A-Za-z0-9_.:-]{1,64}$")
    # Bounded waits (issue 12): a dependency that stops answering costs a request this long
    # at most, then 503 with Retry-After, instead of holding a worker for minutes.
    db_connect_timeout_seconds: float = Field(default=5.0, gt=0, le=300)
    # PostgreSQL's statement_timeout, and the client's wait for any one statement.
    db_statement_timeout_seconds: float = Field(default=30.0, gt=0, le=3600)
    # The wait for a free pooled connection when every one is in use.
    db_pool_timeout_seconds: float = Field(default=10.0, gt=0, le=300)
    # PostgreSQL's planner cost of a random page read, on the service's connections. Its
    # default (4.0) is for spinning disks: with it, a search for a common word scanned the
    # whole plugins table (41 ms at 100,000) instead of the trigram index (15 ms).
    db_random_page_cost: float = Field(default=1.1, gt=0, le=100)
    # PostgreSQL's work_mem on the service's connections. With the default 4 MB the bitmap
    # of a short search (1-2 characters, 121,000 of 1,000,000 plugins) went lossy and every
    # row of those pages was checked again through the grams function: 94 s, 0.4 s at 32 MB.
    db_work_mem_mb: int = Field(default=32, ge=1, le=4096)
    storage_connect_timeout_seconds: float = Field(default=5.0, gt=0, le=300)
    # The wait for each read from S3 (a response, or the next part of one), not a whole upload.
    storage_read_timeout_seconds: float = Field(default=30.0, gt=0, le=3600)
    # The deadline of a whole package write to S3 (on top of each read's timeout): past it the
    # upload answers 503. Unset: the largest package at a slow but healthy link, see
    # `storage_write_deadline_seconds` and docs/deploy.md.
    storage_write_timeout_seconds: float | None = Field(default=None, gt=0, le=86400)
    # /readyz bounds each of its checks by this, so a probe never hangs.
    ready_check_timeout_seconds: float = Field(default=2.0, gt=0, le=60)
    # Browse's q from the host's Tantivy index (catalog.search_index); off: SQL.
    search_index: bool = True
    # SQLite: take the planner's statistics when the app starts (db.analyze_at_start).
    # `marketplace serve --workers N` takes them once itself and turns this off for workers.
    analyze_at_start: bool = True
    # Move what the start allocated out of the garbage collector's sight (gc.freeze) once
    # the app has started: `marketplace serve` turns it on for its processes. Off by
    # default: a process making many apps (the tests) would keep each one's garbage.
    gc_freeze_at_start: bool = False
    # Where the index's files live (shared by the host's workers); default <data_dir>/search-index.
    search_index_dir: Path | None = None
    secret_key: SecretStr | None = None
    # Release signing keys (marketplace.trust.keyring): the keyring's JSON for scale-out, or a
    # file; by default <data_dir>/signing-keys.json, created on first use.
    signing_keys: SecretStr | None = None
    signing_keys_file: Path | None = None
    public_url: str = "http://127.0.0.1:8000"
    access_token_minutes: int = 60
    refresh_token_days: int = 30
    download_url_seconds: int = 900
    plugin_package_max_mb: int = PLUGIN_PACKAGE_MAX_MIB
    scenario_package_max_mb: int = SCENARIO_PACKAGE_MAX_MIB
    icon_max_kb: int = ICON_MAX_BYTES // KIB
    rate_limit_enabled: bool = True
    rate_limit_login: str = "10/minute"
    rate_limit_write: str = "120/minute"
    rate_limit_read: str = "1200/minute"
    # Reviewer console sessions: an absolute lifetime from login, and an idle limit since
    # the last request (docs/decisions.md, "Reviewer console").
    console_session_hours: float = 12
    console_idle_minutes: float = 30
    # Inspection (CONTRACT 13). Workers `marketplace serve` starts beside the API (0: none;
    # run `marketplace inspector` elsewhere). The queue: empty for a SQLite file in the
    # data folder (one host), or a redis:// URL shared by the API and inspector hosts.
    inspection_workers: int = Field(default=1, ge=0, le=64)
    inspection_queue_url: str = Field(default="", pattern=r"^(|rediss?://.*)$")
    inspection_seconds: float = Field(default=20.0, gt=0, le=600)
    inspection_memory_mb: int = Field(default=1024, ge=64, le=65536)
    inspection_processes: int = Field(default=64, ge=4, le=4096)
    # How often an inspector looks for jobs whose worker died (their lease ran out) or whose
    # enqueue was lost, and hands them back to the queue.
    inspection_sweep_seconds: float = Field(default=15.0, gt=0, le=3600)
    # An attempt's lease: its run's limit plus this margin (unpacking, the database). A
    # worker killed mid-job is replaced once its lease has run out.
    inspection_lease_margin_seconds: float = Field(default=60.0, ge=1, le=3600)
    # Automatic halt of a staged rollout (CONTRACT 16): among at least this many installs of
    # a rolling version, more than these shares of distinct users uninstalling it or
    # reporting a crash halt it.
    rollout_halt_min_installs: int = Field(default=20, ge=1, le=1_000_000)
    rollout_halt_uninstall_percent: float = Field(default=20.0, gt=0, le=100)
    rollout_halt_crash_percent: float = Field(default=20.0, gt=0, le=100)
    log_json: bool | None = None
    log_level: str = "INFO"

    @model_validator(mode="after")
    def _fill_defaults(self) -> Settings:
        if not self.database_url:
            self.database_url = f"sqlite+aiosqlite:///{self.data_dir.resolve() / 'marketplace.db'}"
        if not self.storage_url:
            self.storage_url = f"file://{self.data_dir.resolve() / 'blobs'}"
        if self.environment == "production" and self.secret_key is None:
            raise ValueError("MARKETPLACE_SECRET_KEY must be set in production")
        return self

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")

    @property
    def plugin_package_max_bytes(self) -> int:
        return self.plugin_package_max_mb * MIB

    @property
    def scenario_package_max_bytes(self) -> int:
        return self.scenario_package_max_mb * MIB

    @property
    def storage_write_deadline_seconds(self) -> float:
        """The set deadline, or the largest package's time at a slow but healthy link."""
        if self.storage_write_timeout_seconds is not None:
            return self.storage_write_timeout_seconds
        largest = max(self.plugin_package_max_bytes, self.scenario_package_max_bytes)
        return STORAGE_WRITE_BASE_SECONDS + largest / SLOW_STORE_LINK_BYTES_PER_SECOND

    @property
    def icon_max_bytes(self) -> int:
        return self.icon_max_kb * KIB

    def secret(self) -> str:
        """The signing key: configured, or created once and kept in the data folder."""
        if self.secret_key is not None:
            return self.secret_key.get_secret_value()
        path = self.data_dir / "secret.key"
        if path.exists():
            return path.read_text().strip()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        key = secrets.token_urlsafe(48)
        # O_EXCL so two workers starting together agree on one key.
        try:
            with path.open("x") as fh:
                fh.write(key)
            path.chmod(0o600)
        except FileExistsError:
            return path.read_text().strip()
        return key


@lru_cache
def get_settings() -> Settings:
    return Settings()
