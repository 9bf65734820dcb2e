"""GET /api/v1/jobs?state=...: comma lists, repeated states and Slurm's names for the
gateway's states (issue 28, item 9), an unknown name refused with the accepted ones, and
`name_glob` (with any regex or LIKE character in it taken as itself)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from gateway.domain.errors import Invalid
from gateway.domain.state_names import parse_states
from gateway.domain.states import JobState
from tests.api.test_jobs_api import submit
from tests.conftest import MakeUser

WAITING = {JobState.ACCEPTED, JobState.STAGING_IN, JobState.QUEUED}


@pytest.mark.parametrize(("given", "states"), [
    ([], set()),
    (["RUNNING,QUEUED"], {JobState.RUNNING, JobState.QUEUED}),
    (["running", "queued"], {JobState.RUNNING, JobState.QUEUED}),
    (["PENDING"], WAITING), (["pd"], WAITING),
    (["R"], {JobState.RUNNING}), (["CG"], {JobState.STAGING_OUT}),
    (["CD,CA, F"], {JobState.COMPLETED, JobState.CANCELLED, JobState.FAILED}),
    ([" ,"], set()),
])
def test_state_names(given: list[str], states: set[JobState]) -> None:
    assert parse_states(given) == states


def test_an_unknown_state_lists_the_accepted_names() -> None:
    with pytest.raises(Invalid) as raised:
        parse_states(["RUNNING,RUNING"])
    assert raised.value.extra == {"field": "state"}
    assert raised.value.detail.startswith("Unknown job state 'RUNING'; accepted: ACCEPTED, ")
    assert "PENDING/PD = ACCEPTED + STAGING_IN + QUEUED; R = RUNNING;" in raised.value.detail


def test_list_by_state_names_and_name_glob(client: TestClient, make_user: MakeUser) -> None:
    user = make_user()
    waiting = submit(client, user.headers, name="sweep-1")["id"]
    ended = submit(client, user.headers, name="sweep-2")["id"]
    odd = submit(client, user.headers, name="a.b%_[c]*")["id"]
    r = client.post(f"/api/v1/jobs/{ended}/cancel", headers=user.headers)
    assert r.status_code == 202 and r.json()["state"] == "CANCELLED", r.text

    def ids(**params: str | list[str]) -> set[object]:
        r = client.get("/api/v1/jobs", params=params, headers=user.headers)
        assert r.status_code == 200, r.text
        return {job["id"] for job in r.json()["items"]}

    assert ids(state="PENDING") == ids(state="pd") == {waiting, odd}
    assert ids(state="RUNNING,QUEUED") == set()
    assert ids(state="R,CA") == ids(state=["R", "cancelled"]) == {ended}
    assert ids(state=["PD", "CA"]) == {waiting, ended, odd}
    assert ids(name_glob="sweep-*") == {waiting, ended}
    assert ids(name_glob="sweep-?", state="PD") == {waiting}
    assert ids(name_glob="SWEEP-*") == set(), "a glob matches case and all"
    assert ids(name_glob="a.b%_[c]*") == {odd}, "only '*' and '?' are wildcards"
    assert ids(name_glob="a?b*") == {odd}
    assert ids(name_glob="a%") == ids(name_glob="a.b") == set()

    bad = client.get("/api/v1/jobs", params={"state": "PD,RUNING"}, headers=user.headers)
    assert bad.status_code == 422 and bad.json()["field"] == "state"
    assert "Unknown job state 'RUNING'; accepted: " in bad.json()["detail"]
