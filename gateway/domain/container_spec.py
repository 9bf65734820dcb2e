"""A job spec's `container` section: run `executable` inside an image.

    container:
      image: docker://ghcr.io/lab/app:1.0   # or oras://, library://, https://...sif, upload:<id>
      runtime: apptainer                    # optional: apptainer | singularity | charliecloud
      mpi: hybrid                           # hybrid | bind | none (default: hybrid with an
                                            #   mpi.launcher, else none)
      mpi_version: "4.1.4"                  # the release of the MPI inside the image
      binds: [{src: data, dst: /data, read_only: true}]
      environment: {OMP_NUM_THREADS: "4"}   # set inside the container
      gpus: false

Decisions:
- The image's MPI is the job's own `mpi.flavor` (in a container job it names the
  implementation in the image: mpich, intel-mpi, mvapich, cray-mpich or openmpi) plus
  `container.mpi_version`: the spec already says which MPI; the container section only adds
  the release a site's flavour name never carried. The release is needed where it decides
  (Open MPI: a site's Open MPI must share its major; bind mode: the site's library must not
  be older); an MPICH-ABI image in hybrid mode runs under any of the family's launchers.
- For an uploaded SIF (`upload:<id>`) the gateway reads both from the image at submit
  (gateway.services.images.container_images) and stores what it found in the spec.
- Binds are checked here as far as the job alone allows (no '..', ':' or ',', no control
  characters, destinations absolute and distinct); whether an absolute source lies in an
  area the site shares is routing's question, per site.
- A container job runs `executable`: a batch script cannot be put into an image.

Which site can run the image is `containers.compat`'s answer, asked by routing
(gateway.scheduling.constraints) with `container_needs`.
"""

from __future__ import annotations

from typing import Annotated, Any, Self

from pydantic import AfterValidator, Field, ValidationInfo, field_validator, model_validator

from containers.binds import MAX_PATH_CHARS, Bind, check_absolute, resolve, resolve_all
from containers.compat import ContainerNeeds, ImageMpi
from containers.refs import FORMS, MAX_REF_CHARS, ImageRef, RefKind, parse_image_ref
from containers.runtimes import LauncherKind, MpiImpl, MpiMode, RuntimeKind
from containers.versions import VERSION, Version
from gateway.domain.field_issues import FieldIssues, Loc
from gateway.domain.spec_parts import Strict, check_environment, rule_schema
from rules.text import ENV_NAME

MAX_BINDS = 64
# Where a relative bind source is checked: any job directory reads the same.
_SOME_JOB_DIR = "/job"
_SOME_DST = "/mnt"
# Apptainer and SingularityCE set these themselves and ignore a new value.
_RUNTIME_SETS = frozenset({"HOME"})
IMPLEMENTATIONS = ", ".join(m.value for m in MpiImpl)


def _image(value: str) -> str:
    parse_image_ref(value)  # InvalidImageRef is a ValueError: a 422 saying which form
    return value


def _source(value: str) -> str:
    if value.startswith("/"):
        check_absolute(value, "bind source")
    else:
        resolve(Bind(value, _SOME_DST), _SOME_JOB_DIR)
    return value


def _destination(value: str) -> str:
    return check_absolute(value, "bind destination")


def _workdir(value: str) -> str:
    return check_absolute(value, "working directory")


def _stream_file(value: str) -> str:
    return check_absolute(value, "stream file")


_StreamFile = Annotated[str, Field(min_length=1, max_length=MAX_PATH_CHARS),
                        AfterValidator(_stream_file)]


class ContainerBind(Strict):
    """A host path shown inside the container."""

    src: Annotated[str, Field(min_length=1, max_length=MAX_PATH_CHARS, description=(
        "Relative to the job directory, or an absolute path under an area the site lets "
        "jobs bind (its config's `containers.bind_prefixes`). No '..', ':' or ','.")),
        AfterValidator(_source)]
    dst: Annotated[str, Field(min_length=1, max_length=MAX_PATH_CHARS, description=(
        "Absolute path inside the container.")), AfterValidator(_destination)]
    read_only: bool = False


class ContainerStep(Strict):
    """A program run after the job's `executable` (a GA4GH TES task's next executor): in
    its own image or the job's, with its own arguments, environment, working directory
    and stream files."""

    executable: Annotated[str, Field(min_length=1, max_length=4096)]
    image: Annotated[str, Field(min_length=1, max_length=MAX_REF_CHARS, description=(
        f"Its image, when not the job's: {FORMS}. Run by the same runtime, with the same "
        "binds.")), AfterValidator(_image)] | None = None
    args: Annotated[list[Annotated[str, Field(max_length=65536)]], Field(max_length=4096)] = []
    environment: Annotated[dict[str, Annotated[str, Field(max_length=65536)]], Field(
        max_length=1024,
        json_schema_extra={"propertyNames": {"pattern": ENV_NAME.json_pattern}})] = {}
    workdir: Annotated[str, Field(min_length=1, max_length=MAX_PATH_CHARS),
                       AfterValidator(_workdir)] | None = None
    stdin: _StreamFile | None = None
    stdout: _StreamFile | None = None
    stderr: _StreamFile | None = None
    ignore_error: bool = Field(default=False, description=(
        "Go on with the next step, and end the job as completed, even when this one fails."))

    @field_validator("executable", "args")
    @classmethod
    def _no_nul(cls, value: str | list[str]) -> str | list[str]:
        if any("\x00" in word for word in ([value] if isinstance(value, str) else value)):
            raise ValueError("must not contain NUL bytes")
        return value

    @field_validator("environment")
    @classmethod
    def _env(cls, value: dict[str, str], info: ValidationInfo) -> dict[str, str]:
        return check_environment(value, info)


class ContainerSpec(Strict):
    """The image a job's `executable` runs in, how its MPI meets the site's, and what it
    sees of the host."""

    image: Annotated[str, Field(min_length=1, max_length=MAX_REF_CHARS, description=(
        f"The image: {FORMS}.")), AfterValidator(_image)]
    runtime: RuntimeKind | None = Field(default=None, description=(
        "The container runtime; default: the best one the chosen site offers that can run "
        "the image (apptainer, then singularity, then charliecloud)."))
    mpi: MpiMode | None = Field(default=None, description=(
        "hybrid: the site's launcher starts one container per rank and the image's own MPI "
        "runs inside (it must be ABI-compatible with the site's); bind: the site's MPI "
        "libraries are bound into the image; none: one process. Default: hybrid when "
        "mpi.launcher is set, else none."))
    mpi_version: Annotated[str, AfterValidator(VERSION.check), rule_schema(VERSION)] | None = (
        Field(default=None, description=(
            "The release of the MPI inside the image (mpi.flavor names it), e.g. \"4.1.4\". "
            "Needed for Open MPI and in bind mode; read from the image for upload:<id>.")))
    binds: Annotated[list[ContainerBind], Field(max_length=MAX_BINDS)] = []
    workdir: Annotated[str, Field(min_length=1, max_length=MAX_PATH_CHARS, description=(
        "The program's working directory inside the container, absolute (e.g. a bind's "
        "destination); default: the job directory (apptainer and singularity bind it at "
        "its own path, ch-run at /mnt/0).")), AfterValidator(_workdir)] | None = None
    stdin: _StreamFile | None = Field(default=None, description=(
        "A file inside the container the program reads as its standard input (the image "
        "needs /bin/sh; one process: MPI mode none)."))
    stdout: _StreamFile | None = Field(default=None, description=(
        "A file inside the container the program's standard output goes to, instead of "
        "the job's output (the image needs /bin/sh; one process: MPI mode none)."))
    stderr: _StreamFile | None = Field(default=None, description=(
        "As stdout, for its standard error."))
    environment: Annotated[dict[str, Annotated[str, Field(max_length=65536)]], Field(
        max_length=1024, description="Variables set inside the container.",
        json_schema_extra={"propertyNames": {"pattern": ENV_NAME.json_pattern}})] = {}
    gpus: bool = Field(default=False, description=(
        "Show the nodes' GPUs to the container (apptainer and singularity `--nv`); only "
        "sites declaring GPUs take the job."))
    ignore_error: bool = Field(default=False, description=(
        "With `then`: go on with the steps, and end the job as completed, even when "
        "`executable` fails."))
    then: Annotated[list[ContainerStep], Field(max_length=63, description=(
        "Programs run after `executable`, in order, in the same allocation and job "
        "directory (in the job's image unless a step names its own), each once the one "
        "before it succeeded (or ignored its error); one process each (MPI mode none)."))
    ] = []

    @field_validator("binds")
    @classmethod
    def _distinct(cls, value: list[ContainerBind]) -> list[ContainerBind]:
        binds = [Bind(b.src, b.dst, b.read_only) for b in value]
        # Absolute sources pass here; each site checks them against its shared areas.
        resolve_all(binds, _SOME_JOB_DIR, tuple(b.src for b in binds if b.src.startswith("/")))
        return value

    @field_validator("environment")
    @classmethod
    def _env(cls, value: dict[str, str], info: ValidationInfo) -> dict[str, str]:
        return check_environment(value, info)

    @model_validator(mode="after")
    def _steps_alone(self) -> Self:
        if self.then and self.mode is not MpiMode.NONE:
            raise FieldIssues([(("then",), "steps after the program run one process each: "
                                "they need container.mpi none")])
        return self

    @model_validator(mode="after")
    def _runtime_sets(self) -> Self:
        if self.runtime is RuntimeKind.CHARLIECLOUD:
            return self
        for loc, env in [(("environment",), self.environment),
                         *((("then", i, "environment"), s.environment)
                           for i, s in enumerate(self.then))]:
            taken = sorted(_RUNTIME_SETS & set(env))
            if taken:
                raise FieldIssues([(loc, f"apptainer and singularity set {taken[0]} "
                                    "themselves and ignore a new value: leave it out (or "
                                    "ask for `runtime: charliecloud`)")])
        return self

    @property
    def ref(self) -> ImageRef:
        return parse_image_ref(self.image)

    @property
    def stepwise(self) -> bool:
        """Whether the job runs as steps (`then`, or `ignore_error`): each step's exit code
        is recorded, as its launch line says (adapters.base.ContainerLaunch.stepwise)."""
        return bool(self.then) or self.ignore_error

    @property
    def images(self) -> list[str]:
        """The images the job runs, each once: the program's, then its steps' own."""
        return list(dict.fromkeys([self.image, *(s.image for s in self.then if s.image)]))

    @property
    def mode(self) -> MpiMode:
        return self.mpi if self.mpi is not None else MpiMode.NONE


def default_mode(data: Any) -> Any:
    """The raw spec with `container.mpi` filled in when absent: hybrid when the job names
    an MPI launcher, else none (so the stored spec says which)."""
    if not isinstance(data, dict):
        return data
    container, mpi = data.get("container"), data.get("mpi")
    if not isinstance(container, dict) or container.get("mpi") is not None:
        return data
    launcher = mpi.get("launcher") if isinstance(mpi, dict) else None
    mode = MpiMode.NONE if launcher in (None, "none") else MpiMode.HYBRID
    return {**data, "container": {**container, "mpi": mode.value}}


def container_issues(container: ContainerSpec, flavor: str | None, launcher: str,
                     script: bool) -> list[tuple[Loc, str]]:
    """What in the rest of the spec contradicts its container section (`flavor`,
    `launcher`: the spec's `mpi`; `script`: it gives a script), each at its field."""
    issues: list[tuple[Loc, str]] = []
    mode = container.mode
    if script:
        issues.append((("script",), "a container job runs 'executable' (a program inside the "
                                    "image) with 'args'; a script cannot run in a container: "
                                    "give 'executable' instead"))
    if mode is MpiMode.NONE:
        if launcher != "none":
            issues.append((("container", "mpi"), f"mode none runs one process, but "
                           f"mpi.launcher is '{launcher}': set container.mpi to hybrid (the "
                           "image's MPI) or bind (the site's MPI), or drop mpi.launcher"))
        for loc, given in ((("mpi", "flavor"), flavor),
                           (("container", "mpi_version"), container.mpi_version)):
            if given is not None:
                issues.append((loc, "only used with container.mpi hybrid or bind (it names "
                                    "the image's MPI): drop it, or set container.mpi"))
        return issues
    if launcher == "none":
        issues.append((("mpi", "launcher"), f"container.mpi {mode.value} starts one container "
                                            "per rank with a launcher: set mpi.launcher to "
                                            "mpirun or srun"))
    if flavor is not None and flavor not in set(MpiImpl):
        issues.append((("mpi", "flavor"), f"in a container job mpi.flavor names the MPI "
                                          f"inside the image, one of {IMPLEMENTATIONS}; "
                                          f"not {flavor!r}"))
    if container.ref.kind is not RefKind.UPLOAD:
        issues += _stated_mpi_issues(container, flavor, mode)
    return issues


def _stated_mpi_issues(container: ContainerSpec, flavor: str | None, mode: MpiMode
                       ) -> list[tuple[Loc, str]]:
    """What an image the gateway cannot look into must state about its MPI."""
    if flavor is None:
        return [(("mpi", "flavor"), f"container.mpi {mode.value} needs the MPI inside the "
                                    f"image: set mpi.flavor ({IMPLEMENTATIONS}) and "
                                    "container.mpi_version (the gateway reads them itself "
                                    "only from an uploaded image, upload:<id>)")]
    if container.mpi_version is None and (flavor == MpiImpl.OPENMPI or mode is MpiMode.BIND):
        why = ("a site's Open MPI must have its major version" if flavor == MpiImpl.OPENMPI
               else "bind mode needs the site's library no older than the image's")
        return [(("container", "mpi_version"), f"give the release of the image's MPI, e.g. "
                                               f"\"4.1.4\": {why}")]
    return []


def container_needs(container: ContainerSpec, flavor: str | None, launcher: LauncherKind
                    ) -> ContainerNeeds:
    """What routing asks `containers.compat` for this spec (validated: its MPI is stated).
    `launcher`: the spec's, as the core names it (mpirun, mpiexec, srun or none)."""
    mode = container.mode
    mpi = None
    if mode is not MpiMode.NONE and flavor is not None:
        version = (Version.parse(container.mpi_version) if container.mpi_version is not None
                   else None)
        mpi = ImageMpi(MpiImpl(flavor), version)
    return ContainerNeeds(container.ref, mode, mpi, container.runtime, launcher,
                          container.gpus)
