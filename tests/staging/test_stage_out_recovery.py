"""A worker that dies while collecting outputs is replaced after its lease: the job is
collected and finished once, and the late worker's result is discarded."""

from __future__ import annotations

from datetime import timedelta

from fastapi.testclient import TestClient
from sqlalchemy import func, select, update

from gateway.db.base import utcnow
from gateway.db.engine import transaction
from gateway.db.models import Attempt, JobOutput
from gateway.runtime import Runtime
from gateway.services.sites import SiteEntry
from gateway.worker.loop import Worker
from tests.conftest import MakeUser
from tests.staging.helpers import events, run_until, sh, submit


class NoStageOut(Worker):
    """Runs jobs but never collects outputs (as if it died before getting to them)."""

    def _stage_outs(self, site: SiteEntry) -> bool:
        return False


def test_stage_out_resumes_after_the_lease(client: TestClient, runtime: Runtime,
                                           make_user: MakeUser) -> None:
    user = make_user()
    job_id = submit(client, user, {**sh("echo r > result.txt"), "outputs": ["*.txt"]})
    run_until(NoStageOut(runtime, "runner"), client, user, job_id, {"STAGING_OUT"})
    site = runtime.sites.get("local")
    first = Worker(runtime, "first")
    [(attempt_id, _, workdir, spec, owner)] = first._claim_stage_outs(site)
    # Claimed: nobody else takes it while the lease holds.
    assert Worker(runtime, "other")._claim_stage_outs(site) == []
    with transaction(runtime.sessions) as session:
        session.execute(update(Attempt).where(Attempt.id == attempt_id)
                        .values(lease_until=utcnow() - timedelta(seconds=1)))
    job = run_until(Worker(runtime, "second"), client, user, job_id)
    assert job["state"] == "COMPLETED"
    # The first worker wakes up and finishes its copy of the work: nothing changes.
    first._stage_out_one(site, attempt_id, job_id, workdir, spec, owner)
    history = events(client, user, job_id)
    finals = [e for e in history if e["to_state"] == "COMPLETED"]
    assert len(finals) == 1 and finals[0]["actor"] == "worker second"
    with runtime.sessions() as session:
        assert session.scalar(select(func.count()).select_from(JobOutput)
                              .where(JobOutput.job_id == job_id)) == 1
