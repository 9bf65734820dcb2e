"""Reading a stored job spec back (gateway.repositories.jobs.rows): the rules that guard
submission apply again only to a job about to be sent for the first time, and the
charge and the forecast read its resources whatever another section holds."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from gateway.domain.jobspec import JobSpec, Resources
from gateway.repositories.jobs.rows import stored_resources, stored_spec

ACCEPTED = JobSpec.model_validate({
    "name": "old", "script": "#!/bin/sh\nhostname\n",
    "resources": {"ranks": 4, "threads_per_rank": 2, "walltime": "2:00:00"},
}).model_dump(mode="json")
# What it looks like once a rule tightened after it was accepted (a directive refused
# since, an environment name a container runtime now turns into LD_PRELOAD).
OLDER: dict[str, Any] = {
    **ACCEPTED, "script": "#!/bin/sh\n#SBATCH --account=other\nhostname\n",
    "environment": {"APPTAINERENV_LD_PRELOAD": "/tmp/x.so"}}


def test_a_stored_spec_reads_back_as_it_was_accepted() -> None:
    spec = stored_spec(ACCEPTED)
    assert spec.model_dump(mode="json") == ACCEPTED
    assert stored_spec(ACCEPTED, submitting=True) == spec


def test_only_a_job_about_to_be_submitted_meets_the_rules_of_today() -> None:
    # Routed, failed over, recovered, collected or retried: read as accepted.
    assert stored_spec(OLDER).environment == {"APPTAINERENV_LD_PRELOAD": "/tmp/x.so"}
    with pytest.raises(ValidationError, match="#SBATCH --account=other"):
        stored_spec(OLDER, submitting=True)


def test_the_resources_are_read_alone_with_the_spec_defaults() -> None:
    assert stored_resources(OLDER) == Resources(ranks=4, threads_per_rank=2, walltime=7200)
    assert stored_resources({}) == Resources() == JobSpec.model_validate(
        {"name": "x", "executable": "/bin/true"}).resources
    # A section of another rule, unreadable now, never keeps a job from being charged.
    assert stored_resources({**ACCEPTED, "routing": {"policy": "no such"}}).walltime == 7200
