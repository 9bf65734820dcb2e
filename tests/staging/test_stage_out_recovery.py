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
from gateway.worker.loop import Worker
from gateway.worker.staging.stage_out import claim_stage_outs, stage_out_one
from tests.conftest import MakeUser
from tests.staging.helpers import events, run_until, sh, submit


class NoStageOut(Worker):
    """Runs jobs but never collects outputs (as if it died before getting to them)."""

    def __init__(self, runtime: Runtime, worker_id: str) -> None:
        super().__init__(runtime, worker_id)
        self.site_steps = tuple(s for s in self.site_steps if s[0] != "stage-out")


def test_stage_out_resumes_after_the_lease(client: TestClient, runtime: Runtime,
                                           make_user: MakeUser) -> None:
    user = make_user()
    job_id = submit(client, user, {**sh("echo r > result.txt"), "outputs": ["*.txt"]})
    run_until(NoStageOut(runtime, "runner"), client, user, job_id, {"STAGING_OUT"})
    site = runtime.sites.get("local")
    first = Worker(runtime, "first")
    [claim] = claim_stage_outs(first.ctx, site)
    attempt_id = claim.attempt_id
    # Claimed: nobody else takes it while the lease holds.
    assert claim_stage_outs(Worker(runtime, "other").ctx, site) == []
    with transaction(runtime.sessions) as session:
        session.execute(update(Attempt).where(Attempt.id == attempt_id)
                        .values(lease_until=utcnow() - timedelta(seconds=1)))
    job = run_until(Worker(runtime, "second"), client, user, job_id)
    assert job["state"] == "COMPLETED"
    # The first worker wakes up and finishes its copy of the work: nothing changes.
    stage_out_one(first.ctx, site, claim)
    history = events(client, user, job_id)
    finals = [e for e in history if e["to_state"] == "COMPLETED"]
    assert len(finals) == 1 and finals[0]["actor"] == "worker second"
    with runtime.sessions() as session:
        assert session.scalar(select(func.count()).select_from(JobOutput)
                              .where(JobOutput.job_id == job_id)) == 1
