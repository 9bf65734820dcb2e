"""A cancel that arrives while a job stages in stops it before the next input and before
submission: CANCELLED, never submitted. Once the run has ended (STAGING_OUT) a cancel is
refused with 409: the outputs are being collected."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import update

from gateway.db.engine import transaction
from gateway.db.models import Job
from gateway.runtime import Runtime
from gateway.worker.loop import Worker
from gateway.worker.staging import stage_in as stage_in_module
from tests.conftest import MakeUser
from tests.staging.helpers import events, run_until, sh, submit, upload


def test_cancel_between_inputs_ends_the_job_unsubmitted(
        client: TestClient, runtime: Runtime, make_user: MakeUser,
        monkeypatch: pytest.MonkeyPatch) -> None:
    user = make_user()
    inputs = [{"source": f"upload:{upload(client, user, f'input {i}'.encode())}",
               "dest": f"in{i}"} for i in range(3)]
    job_id = submit(client, user, {**sh("touch ran"), "inputs": inputs})
    staged: list[str] = []
    real_stage = stage_in_module.stage

    def stage_then_cancel(*args: Any, **kwargs: Any) -> Any:
        result = real_stage(*args, **kwargs)
        staged.append(args[3])
        if len(staged) == 1:  # the user cancels while the first input is being placed
            r = client.post(f"/api/v1/jobs/{job_id}/cancel", headers=user.headers)
            assert r.status_code == 202, r.text
        return result

    monkeypatch.setattr(stage_in_module, "stage", stage_then_cancel)
    job = run_until(Worker(runtime), client, user, job_id)
    assert job["state"] == "CANCELLED", job
    assert len(staged) == 1  # the other two inputs were never sent
    assert job["attempts"][0]["native_id"] is None
    assert job["attempts"][0]["state"] == "CANCELLED"
    last = events(client, user, job_id)[-1]
    assert last["to_state"] == "CANCELLED" and "while staging in" in last["reason"]
    assert not (runtime.settings.jobs_dir / f"gw-{job_id}" / "ran").exists()


def test_cancel_during_stage_out_is_409(client: TestClient, runtime: Runtime,
                                        make_user: MakeUser) -> None:
    user = make_user()
    job_id = submit(client, user, sh("true"))
    with transaction(runtime.sessions) as session:
        session.execute(update(Job).where(Job.id == job_id).values(state="STAGING_OUT"))
    r = client.post(f"/api/v1/jobs/{job_id}/cancel", headers=user.headers)
    assert r.status_code == 409
    assert r.headers["content-type"].startswith("application/problem+json")
    assert "outputs are being collected" in r.json()["detail"]
