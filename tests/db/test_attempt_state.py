"""`Attempt.state` is typed (AttemptState) yet stored as the strings it always held, so
rows written before the change read back, and a value outside the enum is refused."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select, text
from sqlalchemy.exc import StatementError

from gateway.db.engine import transaction
from gateway.db.models import Attempt
from gateway.domain.states import AttemptState
from gateway.runtime import Runtime
from tests.conftest import MakeUser
from tests.worker.test_worker_local import post


def test_attempt_state_is_an_enum_over_the_same_strings(
        client: TestClient, runtime: Runtime, make_user: MakeUser) -> None:
    user = make_user()
    job_id = post(client, user.headers, {"name": "s", "executable": "/bin/true"})
    with transaction(runtime.sessions) as session:
        session.add(Attempt(job_id=job_id, number=1, site_name="local", tag="t",
                            state=AttemptState.SUBMITTING, workdir="/w"))
    with transaction(runtime.sessions) as session:
        assert session.scalar(text("SELECT state FROM attempts")) == "SUBMITTING"
        # As an older gateway wrote it: a plain string.
        session.execute(text("UPDATE attempts SET state = 'RUNNING'"))
    with runtime.sessions() as session:
        assert session.scalar(select(Attempt.state)) is AttemptState.RUNNING
    r = client.get(f"/api/v1/jobs/{job_id}", headers=user.headers)
    assert r.json()["attempts"][0]["state"] == "RUNNING"
    with pytest.raises(StatementError), transaction(runtime.sessions) as session:
        session.add(Attempt(job_id=job_id, number=2, site_name="local", tag="u",
                            state="STAGING_IN", workdir="/w"))


def test_live_and_final_attempt_states() -> None:
    assert {s for s in AttemptState if s.is_final} == {
        AttemptState.COMPLETED, AttemptState.FAILED, AttemptState.CANCELLED,
        AttemptState.REVOKED}
    assert AttemptState.SUBMITTING.value == "SUBMITTING"
