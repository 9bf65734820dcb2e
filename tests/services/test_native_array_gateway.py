"""A job array sent as ONE native array through the whole gateway path (API, database,
worker, BatchAdapter, the PBS dialect), the site answering from recorded outputs derived
from the PBS documentation (tests/services/test_remote_pbs_lsf.py says how; the live
Slurm test is tests/live/test_native_arrays.py).

One qsub for the whole array, each task recorded with its own subjob id and followed as
a job of its own; a submission whose answer was lost is adopted by the array's tag after
the lease runs out, never submitted twice; and the same array with native arrays off
goes task by task.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import select, update

from adapters.errors import CommandTimeout
from adapters.testing import OK, Recording
from gateway.db.base import utcnow
from gateway.db.engine import transaction
from gateway.db.models import Attempt
from gateway.worker.submission.native_arrays import submit_native_arrays
from tests.conftest import MakeUser
from tests.schedulers.recorded import load
from tests.services.test_remote_pbs_lsf import (
    MKDIR_THEN,
    PBS_SITE,
    SCRATCH,
    Sites,
    _qstat,
    sites,
)

__all__ = ["sites"]  # the fixture, used by name


def _post_array(sites: Sites, headers: dict[str, str], array: str) -> tuple[str, str]:
    body = {"name": "sweep", "site": PBS_SITE, "executable": "/bin/hostname",
            "resources": {"nodes": 1, "ranks": 1, "threads_per_rank": 2, "walltime": 600},
            "array": array}
    r = sites.client.post("/api/v1/jobs", json=body, headers=headers)
    assert r.status_code == 202, r.text
    return r.json()["array_job_id"], r.json()["id"]


def _tasks(sites: Sites, headers: dict[str, str], array_id: str) -> list[dict[str, Any]]:
    r = sites.client.get("/api/v1/jobs", params={"array_job_id": array_id, "limit": 100},
                         headers=headers)
    assert r.status_code == 200, r.text
    return sorted(r.json()["items"], key=lambda job: job["array_index"])


def _array_qsub(array_id: str, option: str) -> tuple[str, ...]:
    tag = f"gw-{array_id}"
    workdir = f"{SCRATCH}/{tag}"
    control = f"{workdir}/.gridgate"
    return ("sh", "-c", MKDIR_THEN[0], MKDIR_THEN[1], workdir, control,
            "/opt/pbs/bin/qsub", "-N", tag, "-o", f"{control}/", "-e", f"{control}/",
            "-j", "n", "-S", "/bin/sh", "-l", "walltime=0:10:00",
            "-l", "select=1:ncpus=2:mpiprocs=1:ompthreads=2", "-k", "oed", "-q", "batch",
            "-J", option)


SUBJOBS = tuple(f"120[{i}].pbsserver" for i in range(4))


def _qstat_subjobs() -> tuple[str, ...]:
    return (*_qstat(SUBJOBS[0]), *SUBJOBS[1:])


def _each_task_finds_its_index(call: Any) -> Recording:
    script = (call.stdin or b"").decode()
    assert "GRIDGATE_ARRAY_TASK_ID=$PBS_ARRAY_INDEX; export GRIDGATE_ARRAY_TASK_ID" in script
    assert "export GRIDGATE_ARRAY_TASK_COUNT=4" in script
    return load("pbs", "qsub_array.txt")


def test_an_array_goes_to_pbs_as_one_qsub_and_each_subjob_is_followed(
        sites: Sites, make_user: MakeUser) -> None:
    user = make_user()
    array_id, _ = _post_array(sites, user.headers, "0-3%1")
    t = sites.transport
    t.expect(_array_qsub(array_id, "0-3%1"), _each_task_finds_its_index)
    t.expect(_qstat_subjobs(), load("pbs", "qstat_subjobs.txt"))
    sites.worker.run_once()
    tasks = _tasks(sites, user.headers, array_id)
    assert [len(j["attempts"]) for j in tasks] == [1, 1, 1, 1]
    assert [j["attempts"][0]["native_id"] for j in tasks] == list(SUBJOBS)
    assert [(j["state"], j["exit_code"]) for j in tasks] == [
        ("COMPLETED", 0), ("FAILED", 3), ("RUNNING", None), ("QUEUED", None)]
    with sites.runtime.sessions() as session:
        workdirs = sorted(session.scalars(select(Attempt.workdir)))
    assert workdirs == [f"{SCRATCH}/gw-{array_id}/{i}" for i in range(4)]
    qsubs = [c for c in t.calls if "/opt/pbs/bin/qsub" in c.argv]
    assert len(qsubs) == 1


def test_a_lost_qsub_answer_is_adopted_by_the_array_tag_never_submitted_twice(
        sites: Sites, make_user: MakeUser) -> None:
    user = make_user()
    array_id, _ = _post_array(sites, user.headers, "0-3")
    t = sites.transport
    t.expect(_array_qsub(array_id, "0-3"), CommandTimeout("qsub: no answer in 120 s"))
    sites.worker.run_once()
    assert {j["state"] for j in _tasks(sites, user.headers, array_id)} == {"STAGING_IN"}
    # The worker is gone: its lease runs out, and a worker takes the array over.
    with transaction(sites.runtime.sessions) as session:
        session.execute(update(Attempt).values(lease_until=utcnow() - timedelta(seconds=1)))
    t.expect(("/opt/pbs/bin/qselect", "-x", "-N", f"gw-{array_id}"),
             Recording(0, b"120[].pbsserver\n", b"", "qselect -N of an array job"))
    t.expect(_qstat_subjobs(), load("pbs", "qstat_subjobs.txt"))
    sites.worker.run_once()
    tasks = _tasks(sites, user.headers, array_id)
    assert [j["attempts"][0]["native_id"] for j in tasks] == list(SUBJOBS)
    assert [len(j["attempts"]) for j in tasks] == [1, 1, 1, 1]
    assert len([c for c in t.calls if "/opt/pbs/bin/qsub" in c.argv]) == 1


def test_a_lost_array_never_taken_is_submitted_once_more(
        sites: Sites, make_user: MakeUser) -> None:
    user = make_user()
    array_id, _ = _post_array(sites, user.headers, "0-3")
    t = sites.transport
    t.expect(_array_qsub(array_id, "0-3"), CommandTimeout("qsub: no answer in 120 s"))
    sites.worker.run_once()
    with transaction(sites.runtime.sessions) as session:
        session.execute(update(Attempt).values(lease_until=utcnow() - timedelta(seconds=1)))
    t.expect(("/opt/pbs/bin/qselect", "-x", "-N", f"gw-{array_id}"), OK)
    t.expect(_array_qsub(array_id, "0-3"), load("pbs", "qsub_array.txt"))
    t.expect(_qstat_subjobs(), load("pbs", "qstat_subjobs.txt"))
    sites.worker.run_once()
    tasks = _tasks(sites, user.headers, array_id)
    assert [j["attempts"][0]["native_id"] for j in tasks] == list(SUBJOBS)


def test_arrays_a_site_cannot_take_natively_are_left_to_the_task_by_task_path(
        sites: Sites, make_user: MakeUser) -> None:
    user = make_user()
    site = sites.runtime.sites.get(PBS_SITE)
    # Not one range: PBS's -J cannot say it.
    array_id, _ = _post_array(sites, user.headers, "0,1,5")
    assert not submit_native_arrays(sites.worker.ctx, site)
    # Native arrays off.
    sites.runtime.settings = sites.runtime.settings.model_copy(
        update={"job_array_native": False})
    other_id, _ = _post_array(sites, user.headers, "0-3")
    assert not submit_native_arrays(sites.worker.ctx, site)
    assert sites.transport.calls == []
    for array in (array_id, other_id):
        assert {(j["state"], len(j["attempts"])) for j in _tasks(sites, user.headers, array)
                } == {("ACCEPTED", 0)}


def _grep_accounting(*native_ids: str) -> tuple[str, ...]:
    patterns = [w for i in native_ids for w in ("-e", f";E;{i};", "-e", f";D;{i};")]
    return ("grep", "-h", "-r", "-F", *patterns, "--", "/var/spool/pbs/server_priv/accounting")


def test_cancelling_a_native_array_cancels_each_unfinished_subjob(
        sites: Sites, make_user: MakeUser) -> None:
    user = make_user()
    array_id, _ = _post_array(sites, user.headers, "0-3%1")
    t = sites.transport
    t.expect(_array_qsub(array_id, "0-3%1"), load("pbs", "qsub_array.txt"))
    t.expect(_qstat_subjobs(), load("pbs", "qstat_subjobs.txt"))
    sites.worker.run_once()
    r = sites.client.post(f"/api/v1/job-arrays/{array_id}/cancel", headers=user.headers)
    assert r.status_code in (200, 202), r.text
    # Only the two subjobs not ended are cancelled, each by its own id; then they are
    # gone from qstat with no accounting record: cancelled.
    t.expect(("/opt/pbs/bin/qdel", SUBJOBS[2]), load("pbs", "qdel_ok.txt"))
    t.expect(("/opt/pbs/bin/qdel", SUBJOBS[3]), load("pbs", "qdel_ok.txt"))
    t.expect((*_qstat(SUBJOBS[2]), SUBJOBS[3]), load("pbs", "qstat_all_unknown.txt"))
    t.expect(_grep_accounting(SUBJOBS[2], SUBJOBS[3]), load("pbs", "accounting_none.txt"))
    sites.worker.run_once()
    assert [j["state"] for j in _tasks(sites, user.headers, array_id)] == [
        "COMPLETED", "FAILED", "CANCELLED", "CANCELLED"]


def test_a_refused_native_array_fails_every_task_saying_why(
        sites: Sites, make_user: MakeUser) -> None:
    user = make_user()
    array_id, _ = _post_array(sites, user.headers, "0-3")
    sites.transport.expect(_array_qsub(array_id, "0-3"), load("pbs", "qsub_unknown_queue.txt"))
    sites.worker.run_once()
    tasks = _tasks(sites, user.headers, array_id)
    assert {j["state"] for j in tasks} == {"FAILED"}
    assert all("Unknown queue" in (j["reason"] or "") for j in tasks), tasks
