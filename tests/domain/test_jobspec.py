import pytest
from pydantic import ValidationError

from gateway.domain.jobspec import SUBMITTED, JobSpec, parse_walltime

BASE = {"name": "t", "executable": "/bin/true"}


def spec(**over: object) -> JobSpec:
    return JobSpec.model_validate({**BASE, **over})


def error_fields(exc: ValidationError) -> list[str]:
    return [".".join(str(p) for p in e["loc"] if "[" not in str(p)) for e in exc.errors()]


@pytest.mark.parametrize(
    ("text", "seconds"),
    [(90, 90), ("90", 90), ("01:30", 90), ("1:00:00", 3600), ("2-00:00:10", 172810)],
)
def test_walltime_forms(text: object, seconds: int) -> None:
    assert parse_walltime(text) == seconds


@pytest.mark.parametrize("bad", [-5, "0", "-1", "1:99", "soon", True, 1.5])
def test_walltime_rejects(bad: object) -> None:
    with pytest.raises(ValueError, match="walltime"):
        parse_walltime(bad)


def test_user_text_is_kept_verbatim() -> None:
    nasty = "x; touch /tmp/pwned $(id)\nsecond line"
    s = spec(name=nasty, args=[nasty], environment={"V": nasty})
    assert s.name == nasty and s.args == [nasty] and s.environment["V"] == nasty


@pytest.mark.parametrize(
    ("over", "field", "words"),
    [
        ({"environment": {"LD_PRELOAD": "x"}}, "environment", "not allowed"),
        ({"environment": {"BAD-NAME": "x"}}, "environment", "not a valid"),
        ({"environment": {"1X": "x"}}, "environment", "not a valid"),
        ({"environment": {"SLURM_JOB_ID": "1"}}, "environment", "reserved"),
        ({"colour": "red"}, "colour", "Extra inputs"),
        ({"resources": {"walltime": -1}}, "resources.walltime", "positive"),
        ({"resources": {"nodes": 2, "ranks": 1}}, "resources", "at least nodes"),
        ({"resources": {"ranks": 9, "nodes": 2, "ranks_per_node": 4}}, "resources", "cannot fit"),
        ({"script": "echo hi"}, "", "exactly one"),
        ({"labels": {"bad key!": "v"}}, "labels", "label key"),
        ({"args": ["a\x00b"]}, "args", "NUL"),
        ({"mpi": {"launcher": "aprun"}}, "mpi.launcher", "Input should be"),
    ],
)
def test_bad_specs_name_the_field(over: dict[str, object], field: str, words: str) -> None:
    with pytest.raises(ValidationError) as info:
        spec(**over)
    assert field in error_fields(info.value)
    assert words in str(info.value)


def test_a_submitted_spec_is_read_back_under_the_rules_it_was_accepted_by() -> None:
    # The worker reads a running job's spec back to collect its outputs; variables it set
    # already must not make it unreadable. A job still to be submitted is refused by the
    # adapters' own check (rules.env_names) when the worker submits it.
    env = {"environment": {"APPTAINERENV_LD_PRELOAD": "/x.so"},
           "container": {"image": "docker://ghcr.io/lab/app:1.0",
                         "environment": {"SINGULARITYENV_BASH_ENV": "/rc"}}}
    data = {**BASE, **env}
    with pytest.raises(ValidationError, match="sets it as LD_PRELOAD"):
        JobSpec.model_validate(data)
    read = JobSpec.model_validate(data, context=SUBMITTED)
    assert read.environment == env["environment"]
    assert read.container is not None and read.container.environment == {
        "SINGULARITYENV_BASH_ENV": "/rc"}


def test_script_job() -> None:
    s = JobSpec.model_validate({"name": "s", "script": "#!/bin/sh\necho hi\n"})
    assert s.executable is None and s.resources.walltime == 3600


def test_schema_forbids_extra_fields() -> None:
    schema = JobSpec.model_json_schema()
    assert schema["additionalProperties"] is False
    assert "resources" in schema["properties"]
