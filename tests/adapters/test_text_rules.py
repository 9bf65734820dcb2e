"""One full-match rule per kind of text, and the adapters' own checks refusing text that
ends in a newline (Python's `$` also matches before a final newline)."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.base import SubmitRequest
from adapters.batch.types import JobLayout, SchedulerDialect
from adapters.errors import SubmitRejected, UnknownJob
from adapters.local.launch import LaunchConfig, job_environment
from adapters.lsf import LsfDialect
from adapters.pbs import PbsDialect
from adapters.sge import SgeDialect
from adapters.slurm import SlurmDialect
from rules import text as text_rules
from rules.text import TextRule

TAG = "gw-0b7e4c1a-1111-4c1a-9a3e-000000000011"
WORKDIR = f"/scratch/gw/{TAG}"
DIALECTS: list[SchedulerDialect] = [SlurmDialect(), SgeDialect(), PbsDialect(), LsfDialect()]

# A valid example of every shared kind.
EXAMPLES = {
    text_rules.ENV_NAME: "LD_PRELOAD", text_rules.LABEL_KEY: "team",
    text_rules.JOB_TAG: TAG, text_rules.SITE_NAME: "parnass2",
    text_rules.PARTITION: "all.q", text_rules.ACCOUNT: "proj7",
    text_rules.MPI_FLAVOR: "openmpi", text_rules.DURATION: "1-02:03:04",
    text_rules.UNIX_ACCOUNT: "gw_alice.2", text_rules.PROJECT_NAME: "climate-2026",
    text_rules.JOB_ID_PREFIX: "d3eca39f", text_rules.EMAIL: "ada.l+hpc@example.org",
    text_rules.ZONE: "eu-north", text_rules.QOS: "long",
}


def test_every_shared_kind_has_an_example() -> None:
    kinds = {v for v in vars(text_rules).values() if isinstance(v, TextRule)}
    assert kinds == set(EXAMPLES)


@pytest.mark.parametrize(("rule", "value"), EXAMPLES.items(), ids=lambda x: str(x)[:20])
def test_a_rule_matches_the_whole_text_only(rule: TextRule, value: str) -> None:
    assert rule.matches(value) and rule.problem(value) is None
    for bad in (value + "\n", value + "\r\n", "\n" + value, value + " "):
        assert not rule.matches(bad)
        with pytest.raises(ValueError, match=f"not a valid {rule.what}"):
            rule.check(bad)


def test_anchors_are_refused_in_a_rule() -> None:
    with pytest.raises(ValueError, match="drop"):
        TextRule("thing", r"^[a-z]+$", "letters")


def _request(**changes: object) -> SubmitRequest:
    base: dict[str, object] = {"tag": TAG, "workdir": WORKDIR, "argv": ["hostname"]}
    base.update(changes)
    return SubmitRequest(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.kind)
@pytest.mark.parametrize("bad", [
    {"env": {"LD_PRELOAD\n": "/tmp/x.so"}}, {"env": {"GREETING\n": "hi"}},
    {"tag": TAG + "\n"}, {"partition": "long\n"}, {"account": "proj7\n"},
])
def test_adapters_refuse_text_ending_in_a_newline(dialect: SchedulerDialect,
                                                   bad: dict[str, object]) -> None:
    with pytest.raises(SubmitRejected, match="not a valid"):
        dialect.submit_command(_request(**bad), JobLayout.of(WORKDIR))


@pytest.mark.parametrize(("dialect", "native_id"), [
    (SlurmDialect(), "7"), (SgeDialect(), "7"), (PbsDialect(), "7.pbsserver"),
    (LsfDialect(), "7")], ids=lambda x: getattr(x, "kind", x))
def test_job_ids_ending_in_a_newline_never_reach_a_command(dialect: SchedulerDialect,
                                                           native_id: str) -> None:
    dialect.cancel_command(native_id)
    with pytest.raises(UnknownJob):
        dialect.cancel_command(native_id + "\n")
    assert native_id + "\n" not in " ".join(dialect.status_command([native_id + "\n"]))


def test_local_launch_refuses_an_environment_name_ending_in_a_newline() -> None:
    config = LaunchConfig(mpiexec=None, path="/usr/bin:/bin", home="/tmp", lang="C.UTF-8",
                          kill_grace_seconds=1.0)
    assert job_environment(_request(env={"GREETING": "hi"}), Path(WORKDIR), config)
    with pytest.raises(SubmitRejected, match="environment variable name"):
        job_environment(_request(env={"LD_PRELOAD\n": "/tmp/x.so"}), Path(WORKDIR), config)
