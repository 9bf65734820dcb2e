"""Gateway settings: one pydantic-settings class, every field overridable by `GRIDGATE_*`.

The embedded default needs no configuration at all: a SQLite file and a signing key
in the user data directory, the built-in token issuer, and the local site.
"""

from __future__ import annotations

import ipaddress
from functools import cached_property
from pathlib import Path
from typing import Literal

import platformdirs
from pydantic import BaseModel, Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from workflows.limits import DEFAULT_LIMITS


class ExternalIssuer(BaseModel):
    """A third-party OpenID provider whose access tokens the gateway accepts."""

    issuer: str
    audience: str
    jwks_url: str
    # Scopes granted when the token carries none of ours (e.g. a bare OIDC token).
    default_scopes: list[str] = Field(default_factory=list)


def _default_data_dir() -> Path:
    return Path(platformdirs.user_data_dir("gridgate"))


class Settings(BaseSettings):
    """Everything the gateway reads from its environment."""

    model_config = SettingsConfigDict(env_prefix="GRIDGATE_", extra="ignore")

    data_dir: Path = Field(default_factory=_default_data_dir)
    database_url: str | None = None
    # Public base URL of this gateway; also the `iss` of the tokens it issues.
    public_url: str = "http://127.0.0.1:8642"
    host: str = "127.0.0.1"
    port: int = 8642
    # Set by `serve --processes N` for its children: bind with SO_REUSEPORT.
    reuse_port: bool = False
    audience: str = "gridgate"
    signing_key_path: Path | None = None
    # The built-in issuer's endpoints carry secrets (client secrets, refresh tokens,
    # passwords): over plain http they answer loopback clients only. Set this when a
    # TLS-terminating proxy is in front: its X-Forwarded-Proto then says what counts.
    trust_proxy_tls: bool = False
    # Sign-in points (passwords, device user codes, client secrets): failed attempts
    # allowed per credential (an account, a user code, a client id) and per client
    # address within the window; beyond them, 429 until the oldest failure ages out.
    login_max_failures_per_account: int = 5
    login_max_failures_per_address: int = 20
    login_failure_window_seconds: int = 900
    access_token_ttl_seconds: int = 3600
    refresh_token_ttl_seconds: int = 30 * 24 * 3600
    device_code_ttl_seconds: int = 600
    device_poll_interval_seconds: int = 5
    external_issuers: list[ExternalIssuer] = Field(default_factory=list)
    jwks_refresh_cooldown_seconds: float = 30.0
    token_leeway_seconds: int = 30

    local_site_enabled: bool = True
    local_site_max_jobs: int = 64
    # Launcher used for MPI jobs on the local site; None means `mpiexec` next to
    # the running interpreter (the PyPI `mpich` wheel), then on PATH.
    local_mpiexec: str | None = None
    # How local jobs are confined: "auto" sandboxes each job with bubblewrap when a probe
    # at startup succeeds; "sandbox" requires it (startup fails without); "none" runs
    # jobs unconfined as the gateway's account, and then only that account may use the
    # local site (other users' submissions are refused).
    local_isolation: Literal["auto", "sandbox", "none"] = "auto"
    # When the gateway runs as root: the unprivileged account sandboxed jobs run as.
    local_job_user: str = "nobody"
    # What network a sandboxed local job has: "none" (its own loopback only), or
    # "outbound" (also connections out through slirp4netns; never the host's loopback).
    local_network: Literal["none", "outbound"] = "none"
    site_configs_dir: Path | None = None
    # Where `secret:NAME` key references in site configs resolve.
    secrets_dir: Path | None = None

    run_worker: bool = True
    worker_poll_seconds: float = 1.0
    # The audit log's sequencer (in every worker) takes committed entries into the tree and
    # signs a new head at most this often: an entry is covered by a signed head within
    # about this long (plus a worker cycle), and the log gains at most one head per period.
    audit_head_seconds: float = Field(default=10.0, ge=0)
    # Submissions to one site in flight at once (each its own channel on the pooled
    # connection; the scheduler serialises what it must), and status calls of the accounts
    # of a site where each researcher is their own.
    worker_submit_threads: int = 4
    # Idle SSH connections one site's accounts keep open between them (a mapped or
    # certificate site has one per researcher; adapters.ssh.site_connections).
    ssh_idle_connections_per_site: int = Field(default=64, ge=1)
    # Plain jobs (no script to store, no inputs) sent to one site in one command; 1: none.
    worker_submit_batch: int = 10
    # How long a submission may stay unconfirmed before another worker recovers it.
    submit_lease_seconds: float = 60.0
    # A worker staging a job's files holds it this long, renewed between files.
    staging_lease_seconds: float = 300.0
    # A file being staged gets at most one progress event (org.gridgate.job.staging) per
    # this many seconds (0: one per chunk the transfer reports); its end always gets one.
    staging_progress_seconds: float = Field(default=5.0, ge=0)
    # A `site: auto` job not started at a site down this long is also routed elsewhere
    # (first to start wins; the other attempt is revoked).
    failover_after_seconds: float = Field(default=300.0, gt=0)
    # The bank (docs/committees/accounting.md): with it on, a job is accepted only
    # if an allocation of its project can cover its quote, and is charged when it ends.
    allocations_enforced: bool = False
    # Most SU refunded for one run the site ended (node failure, preemption).
    refund_cap_su: float = Field(default=100.0, ge=0)
    # How long after a job ends its lien waits for the site's usage record before the
    # job is charged as estimated (and flagged).
    usage_deadline_seconds: float = Field(default=24 * 3600.0, gt=0)
    max_body_bytes: int = 1024 * 1024
    # GET /metrics: with a token, it wants `Authorization: Bearer <token>`; without one,
    # it answers loopback clients only.
    metrics_token: SecretStr | None = None
    # Threads serving synchronous API routes (database work) in one process.
    api_threads: int = 8
    # Output streams (`follow=true`) open at once: per user on this host (all server
    # processes), and per server process. Beyond them a follow is refused with 429 / 503.
    # Event streams (GET /api/v1/events) count against the same caps.
    output_max_streams_per_user: int = Field(default=8, ge=1)
    output_max_streams: int = Field(default=100, ge=1)
    # The event stream (GET /api/v1/events): how often it reads the events table for new
    # ones when no commit woke it (gateway.api.http.event_hub), how often it sends a heartbeat
    # comment, and how long after a higher id was read it still delivers an event whose
    # transaction committed late (gateway.services.events.feed).
    events_poll_seconds: float = Field(default=0.25, gt=0)
    events_heartbeat_seconds: float = Field(default=15.0, gt=0)
    events_late_commit_seconds: float = Field(default=10.0, gt=0)
    # How far back a stream resumed with Last-Event-ID replays; a reader further behind
    # is told to re-read the state (an `org.gridgate.stream.gone` message) instead.
    events_replay_hours: float = Field(default=7 * 24.0, gt=0)
    # A queued job's predicted start (its site's estimate, or the projection of the site's
    # live queue, each routing pass) is announced again (`org.gridgate.job.prediction`)
    # when it moves more than this from the one last announced: the +-10 min window
    # forecasts are told in.
    prediction_change_seconds: float = Field(default=600.0, gt=0)
    # Between routing passes, a site with queued jobs is asked for its queue again (to
    # predict their starts) at most this often (gateway.worker.periodic.prediction_refresh).
    prediction_refresh_seconds: float = Field(default=60.0, gt=0)
    # Webhooks (gateway.services.webhooks): targets must be public https URLs, except in
    # these ranges (comma-separated CIDRs, e.g. a site's own 10.0.0.0/8), where http is
    # allowed too; per request, a timeout and the most response bytes read; a delivery
    # failing this long disables its subscription; the back-off's first and longest waits;
    # how long a worker's lease of the deliveries it sends lasts (renewed every third of
    # it while it sends; a crashed worker's deliveries wait that long).
    webhook_allowed_ranges: str = ""
    webhook_timeout_seconds: float = Field(default=5.0, gt=0)
    webhook_response_max_bytes: int = Field(default=64 * 1024, ge=0)
    webhook_retry_seconds: float = Field(default=24 * 3600.0, gt=0)
    webhook_backoff_seconds: tuple[float, float] = (5.0, 3600.0)
    webhook_lease_seconds: float = Field(default=20.0, gt=0)
    # Job mail (a spec's `notify`, sent by the worker): the SMTP relay (none: no mail, and
    # a job asking for mail is refused), STARTTLS and a login if it wants them, the From
    # address, and domains (comma-separated) any user may have mail sent to besides the
    # verified address their identity provider gave.
    smtp_host: str | None = None
    smtp_port: int = Field(default=25, ge=1, le=65535)
    smtp_starttls: bool = False
    smtp_username: str | None = None
    smtp_password: SecretStr | None = None
    mail_from: str = "gridgate@localhost"
    mail_domains: str = ""

    # The gateway store (uploads): bytes per user over open + complete uploads,
    # the largest single file, the largest chunk one PUT may carry (chunk PUTs are
    # exempt from max_body_bytes), and how long an upload may sit idle unfinished.
    store_quota_bytes: int = 50 * 1024**3
    upload_max_bytes: int = 20 * 1024**3
    upload_chunk_max_bytes: int = 64 * 1024**2
    upload_ttl_seconds: int = 24 * 3600

    # Staging, per job: total bytes and number of files of its inputs (checked at
    # submission for uploads, while staging for the others) and of its outputs.
    job_input_max_bytes: int = 100 * 1024**3
    job_input_max_files: int = 1000
    job_output_max_bytes: int = 100 * 1024**3
    job_output_max_files: int = 10_000
    # file:// URLs (TES inputs and outputs, a spec's `deliver`): the directories on the
    # gateway's host a user may use, comma-separated templates in which {user} is their
    # username and {project} each project of theirs (gateway.services.data.file_urls).
    file_url_dirs: str = ""
    # https:// inputs: the largest file fetched, and how many redirects are followed.
    https_input_max_bytes: int = 10 * 1024**3
    https_max_redirects: int = 5
    https_timeout_seconds: float = 60.0
    # Registry images the gateway pulls for sites that cannot (docker://, oras://): the
    # registries reached over plain HTTP (comma-separated REGISTRY[:PORT], as references
    # name them; loopback test registries), every other one over https only; the most
    # bytes one image may download (all its blobs) and unpack to.
    insecure_registries: str = ""
    registry_image_max_bytes: int = 10 * 1024**3
    registry_timeout_seconds: float = 60.0
    # The sites' staging caches: what no job directory holds and nobody used for this
    # many days is removed (adapters.transfer.cache_prune); 0 keeps everything.
    site_cache_idle_days: float = Field(default=14.0, ge=0)
    # Tasks one job array may have (`array: 0-999`); at most the workflows package's own
    # bound (workflows.limits), which the job spec's syntax check applies.
    job_array_max_tasks: int = Field(default=1000, ge=1, le=DEFAULT_LIMITS.max_array_tasks)
    # Send an array whose tasks all wait at one site to it as one native array when its
    # scheduler has them (gateway.services.lifecycle.native_arrays); off: always task by
    # task.
    job_array_native: bool = True
    # Steps one workflow may write, and step instances (jobs) it may expand to with its
    # matrices: a larger one is refused with 413 before anything is stored.
    workflow_max_steps: int = Field(default=DEFAULT_LIMITS.max_steps, ge=1, le=10_000)
    workflow_max_instances: int = Field(default=DEFAULT_LIMITS.max_instances, ge=1,
                                        le=100_000)

    @field_validator("webhook_allowed_ranges")
    @classmethod
    def _cidrs(cls, value: str) -> str:
        for part in filter(None, (p.strip() for p in value.split(","))):
            ipaddress.ip_network(part, strict=False)  # ValueError names the bad range
        return value

    @cached_property
    def resolved_database_url(self) -> str:
        """The SQLAlchemy URL, defaulting to a SQLite file in the data dir."""
        if self.database_url:
            return self.database_url
        return f"sqlite:///{self.data_dir / 'gridgate.db'}"

    @property
    def resolved_signing_key_path(self) -> Path:
        """Where the built-in issuer's RS256 private key lives (created 0600)."""
        return self.signing_key_path or self.data_dir / "signing-key.pem"

    @property
    def insecure_registry_set(self) -> frozenset[str]:
        """`insecure_registries` as a set of REGISTRY[:PORT] names."""
        return frozenset(n.strip() for n in self.insecure_registries.split(",") if n.strip())

    @property
    def ssh_ca_dir(self) -> Path:
        """The SSH certificate authority's keys (gateway.auth.ssh_ca)."""
        return self.data_dir / "ssh-ca"

    @property
    def store_dir(self) -> Path:
        """Root of the gateway store: `uploads/` (partial) and `blobs/` (by sha256)."""
        return self.data_dir / "store"

    @property
    def jobs_dir(self) -> Path:
        """Root of the local site's per-job directories."""
        return self.data_dir / "jobs"
