"""Which environment variables a job may set: judged by what each name becomes inside a
container (Apptainer strips APPTAINERENV_ and SINGULARITYENV_, SingularityCE
SINGULARITYENV_; APPTAINER_/SINGULARITY_ names are the runtime's own options; ch-run passes
names as they are), and refused alike by every adapter before anything reaches a site."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.base import SubmitRequest
from adapters.batch.types import JobLayout, SchedulerDialect
from adapters.errors import SubmitRejected
from adapters.local.launch import LaunchConfig, job_environment
from containers.errors import InvalidLaunch
from containers.launch import ContainerRun, Launcher, container_argv
from containers.runtimes import RuntimeKind
from containers.site_caps import RuntimeOffer
from containers.versions import version
from rules.env_names import env_name_problem, runtime_name
from tests.adapters.test_text_rules import DIALECTS, WORKDIR, _request

# A name, then what its message says (None: allowed).
CASES = [
    ("OMP_NUM_THREADS", None),
    ("PATH", None),
    ("APPTAINERENV_OMP_NUM_THREADS", None),
    ("APPTAINERENV_PREPEND_PATH", None),  # edits PATH, which a job may set anyway
    ("LD_PRELOAD", "'LD_PRELOAD' is not allowed: LD_PRELOAD changes how the loader"),
    ("APPTAINERENV_LD_PRELOAD", "'APPTAINERENV_LD_PRELOAD' is not allowed: a container "
                                "runtime sets it as LD_PRELOAD inside the container"),
    ("SINGULARITYENV_LD_PRELOAD", "sets it as LD_PRELOAD inside the container"),
    ("APPTAINERENV_BASH_ENV", "sets it as BASH_ENV inside the container, and BASH_ENV "
                              "changes how the loader or a shell starts a program"),
    ("SINGULARITYENV_LD_AUDIT", "sets it as LD_AUDIT"),
    ("APPTAINERENV_SINGULARITYENV_LD_PRELOAD", "sets it as LD_PRELOAD"),
    ("SINGULARITYENV_APPTAINERENV_APPTAINERENV_PERL5OPT", "sets it as PERL5OPT"),
    ("APPTAINER_BIND", "APPTAINER_BIND configures the container runtime itself"),
    ("APPTAINER_ENV_FILE", "configures the container runtime itself"),
    ("SINGULARITY_CONTAINALL", "configures the container runtime itself"),
    ("APPTAINERENV_APPTAINER_NO_EVAL", "sets it as APPTAINER_NO_EVAL inside the container, "
                                       "and APPTAINER_NO_EVAL configures"),
    ("APPTAINERENV_", "a container runtime's prefix with no variable name after it"),
    ("APPTAINERENV_LD_PRELOAD\n", "is not a valid environment variable name"),
    ("apptainerenv_LD_PRELOAD", None),  # the runtimes match their prefixes case by case
]


@pytest.mark.parametrize(("name", "says"), CASES)
def test_a_name_is_judged_by_what_it_becomes(name: str, says: str | None) -> None:
    problem = env_name_problem(name)
    if says is None:
        assert problem is None
    else:
        assert problem is not None and says in problem, problem


def test_every_prefix_is_stripped_again_and_again() -> None:
    assert runtime_name("APPTAINERENV_SINGULARITYENV_APPTAINERENV_X") == "X"
    assert runtime_name("X_APPTAINERENV_Y") == "X_APPTAINERENV_Y"
    assert runtime_name("APPTAINER_BIND") == "APPTAINER_BIND"


BAD = {"APPTAINERENV_LD_PRELOAD": "/tmp/x.so"}


@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.kind)
def test_every_batch_dialect_refuses_a_prefixed_denied_name(dialect: SchedulerDialect
                                                            ) -> None:
    dialect.submit_command(_request(env={"APPTAINERENV_X": "1"}), JobLayout.of(WORKDIR))
    with pytest.raises(SubmitRejected, match="sets it as LD_PRELOAD"):
        dialect.submit_command(_request(env=BAD), JobLayout.of(WORKDIR))


def test_the_local_adapter_refuses_a_prefixed_denied_name() -> None:
    config = LaunchConfig(mpiexec=None, path="/usr/bin:/bin", home="/tmp", lang="C.UTF-8",
                          kill_grace_seconds=1.0)
    request: SubmitRequest = _request(env={"SINGULARITYENV_BASH_ENV": "/tmp/rc"})
    with pytest.raises(SubmitRejected, match="sets it as BASH_ENV"):
        job_environment(request, Path(WORKDIR), config)


@pytest.mark.parametrize("kind", list(RuntimeKind), ids=lambda k: k.value)
def test_every_runtime_launch_line_refuses_them(kind: RuntimeKind) -> None:
    offer = RuntimeOffer(kind, version("1.2.5"))
    for name in ("APPTAINERENV_LD_PRELOAD", "LD_PRELOAD", "APPTAINER_BIND"):
        run = ContainerRun(offer, "/img.sif", ("./app",), WORKDIR, env={name: "x"})
        with pytest.raises(InvalidLaunch, match=f"'{name}' is not allowed"):
            container_argv(run, Launcher())
