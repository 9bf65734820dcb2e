"""The job request a researcher sends: validated strictly, stored verbatim.

Every string here is data. Names, arguments and environment values are never
interpreted by a shell on the gateway or on a site.
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, Self

from pydantic import (
    AfterValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from adapters.batch import directives as script_directives
from gateway.domain.container_spec import ContainerSpec, container_issues, default_mode
from gateway.domain.deliveries import Deliveries
from gateway.domain.field_issues import FieldIssues
from gateway.domain.job_relations import ArrayText, DependsOn
from gateway.domain.notify import Notify
from gateway.domain.routing_policy import (
    DEFAULT,
    PolicyName,
    deadline_description,
    deadline_rule_problem,
    pinned_policy,
    pins,
    policy_description,
    routing_schema,
)
from gateway.domain.spec_parts import Strict, check_environment, rule_schema, submitted
from gateway.domain.staging import OutputsMode, check_job_path, parse_source
from rules.text import (
    DURATION,
    ENV_NAME,
    LABEL_KEY,
    MPI_FLAVOR,
    PARTITION,
    QOS,
    SITE_NAME,
    ZONE,
    TextRule,
)

_SECONDS = TextRule("walltime", r"-?[0-9]+", "use seconds or [D-][HH:]MM:SS")
# RFC 3339 date-time (section 5.6): a full date, a time and an explicit offset.
RFC3339 = TextRule(
    "RFC 3339 time",
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,9})?"
    r"(?:[Zz]|[+-][0-9]{2}:[0-9]{2})",
    "write a date, a time and an offset, e.g. 2026-11-25T18:00:00Z")
# Sites a hedged job may be submitted to at once: each copy holds a place in a queue.
MAX_HEDGE = 4


# Validation context for a spec accepted earlier and already submitted (the worker reads
# it back to recover a submission or collect outputs; every stored spec is read through
# gateway.repositories.jobs.rows.stored_spec): the checks that guard submission and
# staging in, which may have tightened since, are not applied again. The adapters check
# a script's directives and the environment's names again at any submission.
SUBMITTED = {"submitted": True}
# The site of a job the gateway routes.
AUTO = "auto"


def _site_name(value: str) -> str:
    # `--site Local`: say what is wrong with it, not only what a site name looks like.
    if not SITE_NAME.matches(value) and SITE_NAME.matches(value.lower()):
        raise ValueError(f"{value!r} is not a valid site name: site names are lower case; "
                         f"did you mean '{value.lower()}'?")
    return SITE_NAME.check(value)


def parse_walltime(value: Any) -> int:
    """Seconds from an int or a Slurm-style `[D-][HH:]MM:SS` string."""
    if isinstance(value, bool):
        raise ValueError("walltime must be seconds or [D-][HH:]MM:SS")
    if isinstance(value, int):
        seconds = value
    elif isinstance(value, str):
        # Matched whole and never stripped: "1:00:00\n" is not a walltime.
        if _SECONDS.matches(value):
            seconds = int(value)
        else:
            match = DURATION.fullmatch(value)
            if not match:
                raise ValueError(f"walltime {value!r} is not seconds or [D-][HH:]MM:SS")
            parts = {k: int(v) if v else 0 for k, v in match.groupdict().items()}
            if parts["m"] >= 60 or parts["s"] >= 60:
                raise ValueError(f"walltime {value!r}: minutes and seconds must be below 60")
            seconds = parts["d"] * 86400 + parts["h"] * 3600 + parts["m"] * 60 + parts["s"]
    else:
        raise ValueError("walltime must be seconds or [D-][HH:]MM:SS")
    if seconds <= 0:
        raise ValueError(f"walltime must be positive, got {seconds} seconds")
    return seconds


class MpiLauncher(StrEnum):
    NONE = "none"
    MPIRUN = "mpirun"
    SRUN = "srun"


class Resources(Strict):
    """What the job needs. Defaults describe a one-core, one-hour serial job."""

    nodes: Annotated[int, Field(ge=1, le=100_000)] = 1
    ranks: Annotated[int, Field(ge=1, le=10_000_000)] = 1
    ranks_per_node: Annotated[int, Field(ge=1, le=100_000)] | None = None
    threads_per_rank: Annotated[int, Field(ge=1, le=10_000)] = 1
    memory_mb: Annotated[int, Field(ge=1)] | None = Field(
        default=None, description="Memory per node in MiB."
    )
    scratch_mb: Annotated[int, Field(ge=1)] | None = Field(
        default=None, description="Node-local scratch disk per node in MiB (Slurm's "
                                  "--tmp); only sites that declare their nodes' scratch run it."
    )
    walltime: Annotated[int, Field(description="Seconds; `[D-][HH:]MM:SS` is accepted.")] = 3600

    @field_validator("walltime", mode="before")
    @classmethod
    def _walltime(cls, value: Any) -> int:
        return parse_walltime(value)

    @model_validator(mode="after")
    def _ranks_fit_nodes(self) -> Self:
        if self.ranks < self.nodes:
            raise ValueError(f"ranks ({self.ranks}) must be at least nodes ({self.nodes})")
        if self.ranks_per_node is not None and self.ranks > self.nodes * self.ranks_per_node:
            raise ValueError(
                f"ranks ({self.ranks}) cannot fit on {self.nodes} node(s) with "
                f"ranks_per_node={self.ranks_per_node}"
            )
        return self

    @property
    def max_ranks_per_node(self) -> int:
        """Ranks on the busiest node."""
        if self.ranks_per_node is not None:
            return self.ranks_per_node
        return -(-self.ranks // self.nodes)


class Mpi(Strict):
    launcher: MpiLauncher = MpiLauncher.NONE
    flavor: Annotated[str, AfterValidator(MPI_FLAVOR.check), rule_schema(MPI_FLAVOR)] | None = (
        Field(default=None, description=(
            "MPI implementation, e.g. mpich or openmpi: one of the site's flavors; in a "
            "container job the MPI inside the image (mpich, intel-mpi, mvapich, cray-mpich "
            "or openmpi).")))


def parse_rfc3339(value: Any) -> datetime:
    """A timezone-aware datetime from an RFC 3339 string (matched whole), in UTC."""
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError("the deadline needs a UTC offset, e.g. 2026-11-25T18:00:00Z")
        return value.astimezone(UTC)
    if not isinstance(value, str):
        raise ValueError("the deadline must be an RFC 3339 time, e.g. 2026-11-25T18:00:00Z")
    RFC3339.check(value)
    try:
        moment = datetime.fromisoformat(value.upper().replace(" ", "T"))
    except ValueError:
        raise ValueError(f"{value!r} is not a real date and time") from None
    return moment.astimezone(UTC)


def deadline_problem(routing: Routing, now: datetime) -> str | None:
    """Why a new job's deadline cannot be taken (it has passed), or None."""
    if routing.deadline is not None and routing.deadline <= now:
        return (f"The deadline {routing.deadline.isoformat()} has already passed; give a "
                "future RFC 3339 time in 'routing.deadline'.")
    return None


def launcher_problem(spec: JobSpec) -> str | None:
    """Why a new job could not start all its ranks, or None. A program asking for more
    than one rank with no MPI launcher would run as one process: refused rather than
    guessed, since an `auto` job's site (and so its launcher) is not known yet. A script
    starts its ranks itself (`mpirun` or `srun` in it), so it needs no launcher here."""
    ranks = spec.resources.ranks
    if ranks <= 1 or spec.script is not None or spec.mpi.launcher != MpiLauncher.NONE:
        return None
    return (f"{ranks} ranks need an MPI launcher to start them, and 'mpi.launcher' is "
            "'none' (one process would run). Set mpi.launcher to 'mpirun' (any site with "
            "MPI) or 'srun' (Slurm sites), e.g. `mpi: {launcher: mpirun, flavor: mpich}`; "
            "or ask for 1 rank; or give a 'script' that starts the ranks itself.")


class Routing(Strict):
    """Where a `site: auto` job goes: by `policy`, over its `hedge` best sites."""

    # The policy words, their deadline rules and the schema saying both come from the
    # routing policy registry (gateway.domain.routing_policy), read as each spec is.
    model_config = ConfigDict(extra="forbid", frozen=True, json_schema_extra=routing_schema)

    policy: PolicyName = Field(default=PolicyName(DEFAULT),
                               description=policy_description())
    hedge: Annotated[int, Field(ge=1, le=MAX_HEDGE, description=(
        f"Submit to this many of the best sites (at most {MAX_HEDGE}); the first copy to "
        "start wins and the others are cancelled."))] = 1
    deadline: datetime | None = Field(default=None, description=deadline_description())
    zones: Annotated[list[Annotated[str, AfterValidator(ZONE.check)]], Field(
        max_length=64, description=(
            "Where the job may go: site names, or zones that sites declare (their config's "
            "`routing.zones`); empty: anywhere. As `sbatch --clusters=a,b`: the policy "
            "chooses among them."))] = []

    @field_validator("deadline", mode="before")
    @classmethod
    def _deadline(cls, value: Any) -> datetime | None:
        # That a new job's deadline lies ahead is checked at submission
        # (gateway.services.jobs.submission): a stored spec stays valid once its deadline passes.
        return None if value is None else parse_rfc3339(value)

    @model_validator(mode="after")
    def _deadline_policy(self) -> Self:
        problem = deadline_rule_problem(self.policy, self.deadline)
        if problem is not None:
            raise ValueError(problem)
        return self


def _output_glob(value: str, info: ValidationInfo) -> str:
    return check_job_path(value, glob=True, submitted=submitted(info))


OutputGlob = Annotated[str, Field(min_length=1, max_length=4096), AfterValidator(_output_glob)]


class Input(Strict):
    """One file to place in the job directory before the job is submitted."""

    source: Annotated[str, Field(min_length=1, max_length=8192, description=(
        "upload:<upload id> (a complete upload of yours), site://NAME/ABSOLUTE/PATH (a file "
        "at a federated site, copied site to site) or an https:// URL."))]
    dest: Annotated[str, Field(min_length=1, max_length=4096, description=(
        "Path relative to the job directory; no absolute paths, leading '~', '..' or NUL bytes."))]

    @field_validator("source")
    @classmethod
    def _source(cls, value: str) -> str:
        parse_source(value)
        return value

    @field_validator("dest")
    @classmethod
    def _dest(cls, value: str, info: ValidationInfo) -> str:
        return check_job_path(value, submitted=submitted(info))


class JobSpec(Strict):
    """A job request. Exactly one of `executable` or `script`."""

    # The schema says "exactly one" too, so generated requests and clients know it (as
    # if/then/else: a oneOf would make client generators split JobSpec in two types).
    model_config = ConfigDict(extra="forbid", frozen=True, json_schema_extra={
        "if": {"required": ["executable"], "properties": {"executable": {"type": "string"}}},
        "then": {"not": {"required": ["script"],
                         "properties": {"script": {"type": "string"}}}},
        "else": {"required": ["script"], "properties": {"script": {"type": "string"}}}})

    name: Annotated[str, Field(min_length=1, max_length=255)]
    project: Annotated[str, Field(min_length=1, max_length=64)] | None = Field(
        default=None, description="Project to charge; defaults to the user's personal project."
    )
    executable: Annotated[str, Field(min_length=1, max_length=4096)] | None = None
    args: Annotated[list[Annotated[str, Field(max_length=65536)]], Field(max_length=4096)] = []
    script: Annotated[str, Field(min_length=1, max_length=1_048_576)] | None = Field(
        default=None, description=(
            "A batch script, run by /bin/sh unless it has a #! line. Its scheduler directive "
            "lines (#SBATCH, #$, #PBS, #BSUB) may only ask for mail; any other is refused."))
    environment: Annotated[dict[str, Annotated[str, Field(max_length=65536)]], Field(
        max_length=1024, json_schema_extra={"propertyNames": {"pattern": ENV_NAME.json_pattern}}
    )] = {}
    resources: Resources = Resources()
    mpi: Mpi = Mpi()
    site: Annotated[str, AfterValidator(_site_name), rule_schema(SITE_NAME)] = AUTO
    partition: Annotated[str, AfterValidator(PARTITION.check), rule_schema(PARTITION)] | None = (
        Field(default=None, description="Partition (Slurm) or queue; default: the site's."))
    qos: Annotated[str, AfterValidator(QOS.check), rule_schema(QOS)] | None = Field(
        default=None, description="Quality of service (Slurm's --qos): one the site offers "
                                  "(only sites that offer it run the job); default: the "
                                  "account's.")
    labels: Annotated[dict[str, Annotated[str, Field(max_length=255)]], Field(
        max_length=64, json_schema_extra={"propertyNames": {"pattern": LABEL_KEY.json_pattern}}
    )] = {}
    routing: Routing = Field(default_factory=Routing, description=(
        "How a `site: auto` job's site is chosen; a job naming its site is pinned there."))
    inputs: Annotated[list[Input], Field(max_length=10_000, description=(
        "Files staged into the job directory (STAGING_IN) before submission."))] = []
    outputs: Annotated[list[OutputGlob], Field(
        max_length=256, description=(
            "Globs relative to the job directory ('*' and '?' within a name, '**' for any "
            "depth) collected after the run (STAGING_OUT)."))] = []
    container: ContainerSpec | None = Field(default=None, description=(
        "Run `executable` inside this container image (with `mpi`: one container per "
        "rank); see the container fields."))
    outputs_mode: OutputsMode = Field(default=OutputsMode.FETCH, description=(
        "fetch: copy matched outputs into the gateway store (verified) to download them "
        "from the API; keep: leave them on the site and only list them."))
    deliver: Deliveries = []
    # Slurm-style relations (issue 16), checked by gateway.domain.job_relations.
    depends_on: DependsOn = []
    array: ArrayText | None = None
    notify: Notify | None = Field(default=None, description=(
        "Mail when the job begins, ends or fails (as sbatch --mail-type), e.g. "
        "`notify: {mail: [begin, end]}`."))

    @field_validator("name", "executable")
    @classmethod
    def _no_nul(cls, value: str | None) -> str | None:
        if value is not None and "\x00" in value:
            raise ValueError("must not contain NUL bytes")
        return value

    @field_validator("script")
    @classmethod
    def _script_directives(cls, value: str | None, info: ValidationInfo) -> str | None:
        # Refused here, at submit, for every scheduler: "auto" jobs may go to any site.
        if not submitted(info):
            script_directives.check_all(value)
        return value

    @field_validator("args")
    @classmethod
    def _args_no_nul(cls, value: list[str]) -> list[str]:
        for i, arg in enumerate(value):
            if "\x00" in arg:
                raise ValueError(f"argument {i} contains a NUL byte")
        return value

    @field_validator("environment")
    @classmethod
    def _env_names(cls, value: dict[str, str], info: ValidationInfo) -> dict[str, str]:
        return check_environment(value, info)

    @field_validator("labels")
    @classmethod
    def _label_keys(cls, value: dict[str, str]) -> dict[str, str]:
        for key in value:
            LABEL_KEY.check(key)
        return value

    @model_validator(mode="after")
    def _one_program(self) -> Self:
        if (self.executable is None) == (self.script is None):
            raise ValueError("give exactly one of 'executable' or 'script'")
        if self.script is not None and self.args:
            raise ValueError("'args' go with 'executable', not with 'script'")
        return self

    @model_validator(mode="after")
    def _container_fits(self) -> Self:
        if self.container is not None:
            issues = container_issues(self.container, self.mpi.flavor, self.mpi.launcher.value,
                                      self.script is not None)
            if issues:
                raise FieldIssues(issues)
        return self

    @model_validator(mode="after")
    def _deliver_fetched(self) -> Self:
        if self.deliver and self.outputs_mode is not OutputsMode.FETCH:
            raise ValueError("'deliver' sends outputs from the gateway store: it needs "
                             "outputs_mode fetch")
        return self

    @model_validator(mode="before")
    @classmethod
    def _container_mode(cls, data: Any) -> Any:
        return default_mode(data)

    @model_validator(mode="before")
    @classmethod
    def _pinned_by_default(cls, data: Any) -> Any:
        # A job naming its site is pinned there: the policy says so in the stored spec.
        if isinstance(data, dict) and data.get("site", AUTO) != AUTO:
            routing = data.get("routing")
            pinned = pinned_policy()
            if routing is None:
                data = {**data, "routing": {"policy": pinned}}
            elif isinstance(routing, dict) and "policy" not in routing:
                data = {**data, "routing": {**routing, "policy": pinned}}
        return data

    @model_validator(mode="after")
    def _routing_matches_site(self) -> Self:
        policy = self.routing.policy
        pinned = pins(policy)
        if self.site == AUTO and pinned:
            raise ValueError(f"`routing.policy: {policy}` needs a site: name it in 'site'")
        if self.site != AUTO and not pinned:
            raise ValueError(f"a job naming site '{self.site}' is pinned there: drop "
                             "'routing.policy' or set `site: auto`")
        if self.site != AUTO and self.routing.zones:
            raise ValueError(f"a job naming site '{self.site}' runs there only: drop "
                             "'routing.zones' or set `site: auto`")
        if self.site != AUTO and self.routing.hedge > 1:
            raise ValueError(f"a job naming site '{self.site}' runs there only: hedging needs "
                             "`site: auto`")
        return self

    @property
    def collected(self) -> list[str]:
        """The globs stage-out collects: `outputs` and those of `deliver`."""
        return [*self.outputs, *(d.glob for d in self.deliver if d.glob not in self.outputs)]

    @property
    def pinned(self) -> bool:
        """Whether the job names its site (routing keeps it there)."""
        return self.site != AUTO
