"""The job request a researcher sends: validated strictly, stored verbatim.

Every string here is data. Names, arguments and environment values are never
interpreted by a shell on the gateway or on a site.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Self

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from adapters import script_directives
from adapters.text_rules import (
    DURATION,
    ENV_NAME,
    LABEL_KEY,
    MPI_FLAVOR,
    PARTITION,
    SITE_NAME,
    TextRule,
)
from gateway.domain.staging import OutputsMode, check_job_path, parse_source

# Variables that change how a loader or shell behaves before the user's program runs.
ENV_DENYLIST = frozenset(
    {
        "LD_PRELOAD",
        "LD_AUDIT",
        "LD_DEBUG_OUTPUT",
        "BASH_ENV",
        "ENV",
        "SHELLOPTS",
        "BASHOPTS",
        "PROMPT_COMMAND",
        "PS4",
        "IFS",
        "PYTHONSTARTUP",
        "PERL5OPT",
        "NODE_OPTIONS",
    }
)
ENV_RESERVED_PREFIXES = ("GRIDGATE_", "BASH_FUNC_", "SLURM_", "SGE_", "PBS_", "LSB_")
_SECONDS = TextRule("walltime", r"-?[0-9]+", "use seconds or [D-][HH:]MM:SS")


# Validation context for a spec accepted earlier and already submitted (the worker reads
# it back to recover a submission or collect outputs): the checks that guard submission
# and staging in, which may have tightened since, are not applied again. The adapters
# check a script's directives again at any submission.
SUBMITTED = {"submitted": True}


def _submitted(info: ValidationInfo) -> bool:
    return isinstance(info.context, dict) and info.context.get("submitted") is True


def rule_schema(rule: TextRule) -> Any:
    """A pydantic Field showing `rule`'s pattern in the JSON Schema (the check itself is
    `AfterValidator(rule.check)`: a full match)."""
    return Field(json_schema_extra={"pattern": rule.json_pattern})


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


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


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
        Field(default=None, description="MPI implementation, e.g. mpich or openmpi."))


def _output_glob(value: str, info: ValidationInfo) -> str:
    return check_job_path(value, glob=True, submitted=_submitted(info))


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
        return check_job_path(value, submitted=_submitted(info))


class JobSpec(Strict):
    """A job request. Exactly one of `executable` or `script`."""

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
        max_length=1024
    )] = {}
    resources: Resources = Resources()
    mpi: Mpi = Mpi()
    site: Annotated[str, AfterValidator(SITE_NAME.check), rule_schema(SITE_NAME)] = "auto"
    partition: Annotated[str, AfterValidator(PARTITION.check), rule_schema(PARTITION)] | None = (
        Field(default=None, description="Partition (Slurm) or queue; default: the site's."))
    labels: Annotated[dict[str, Annotated[str, Field(max_length=255)]], Field(max_length=64)] = {}
    inputs: Annotated[list[Input], Field(max_length=10_000, description=(
        "Files staged into the job directory (STAGING_IN) before submission."))] = []
    outputs: Annotated[list[OutputGlob], Field(
        max_length=256, description=(
            "Globs relative to the job directory ('*' and '?' within a name, '**' for any "
            "depth) collected after the run (STAGING_OUT)."))] = []
    outputs_mode: OutputsMode = Field(default=OutputsMode.FETCH, description=(
        "fetch: copy matched outputs into the gateway store (verified) to download them "
        "from the API; keep: leave them on the site and only list them."))

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
        if not _submitted(info):
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
    def _env_names(cls, value: dict[str, str]) -> dict[str, str]:
        for name, val in value.items():
            ENV_NAME.check(name)
            if name in ENV_DENYLIST:
                raise ValueError(f"environment name {name!r} is not allowed")
            if name.startswith(ENV_RESERVED_PREFIXES):
                raise ValueError(f"environment name {name!r} uses a reserved prefix")
            if "\x00" in val:
                raise ValueError(f"environment value of {name!r} contains a NUL byte")
        return value

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
