"""Issue 14 on the API side: what a new user meets first (events that say what happened,
MPI jobs that cannot silently run one process)."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.conftest import MakeUser

SPEC = {"name": "mpi", "executable": "python3", "args": ["pingpong.py"], "site": "local"}


def test_the_accepted_event_says_accepted_not_submitted(client: TestClient,
                                                        make_user: MakeUser) -> None:
    user = make_user()
    pinned = client.post("/api/v1/jobs", json=SPEC, headers=user.headers).json()
    auto = client.post("/api/v1/jobs", json={**SPEC, "site": "auto"},
                       headers=user.headers).json()
    reasons = [client.get(f"/api/v1/jobs/{j['id']}/events", headers=user.headers)
               .json()["items"][0]["reason"] for j in (pinned, auto)]
    # Nothing was sent to a site yet: the worker says "submitted" when it does.
    assert reasons == ["accepted for site 'local'",
                       "accepted; waiting for a routing pass to choose its site"]


def test_ranks_without_an_mpi_launcher_are_refused_naming_the_field(
        client: TestClient, make_user: MakeUser) -> None:
    user = make_user()
    two = {**SPEC, "resources": {"ranks": 2}}
    for path in ("/api/v1/jobs", "/api/v1/jobs:estimate"):
        for body in (two, {**two, "mpi": {"launcher": "none", "flavor": "mpich"}},
                     {**two, "site": "auto"}):
            r = client.post(path, json=body, headers=user.headers)
            assert r.status_code == 422, (path, body, r.text)
            problem = r.json()
            assert problem["detail"].startswith(
                "2 ranks need an MPI launcher to start them, and 'mpi.launcher' is 'none'")
            assert "'mpirun'" in problem["detail"] and "'srun'" in problem["detail"]
            assert problem["field"] == "mpi.launcher"
    assert client.get("/api/v1/jobs", headers=user.headers).json()["items"] == []


def test_ranks_with_a_launcher_one_rank_or_a_script_are_accepted(
        client: TestClient, make_user: MakeUser) -> None:
    user = make_user()
    fine = [
        {**SPEC, "resources": {"ranks": 1, "threads_per_rank": 2}},
        # A script starts its own ranks (mpirun or srun in it).
        {"name": "s", "script": "mpirun -n 2 ./a.out\n", "site": "local",
         "resources": {"ranks": 2}},
    ]
    for body in fine:
        r = client.post("/api/v1/jobs", json=body, headers=user.headers)
        assert r.status_code == 202, (body, r.text)


def test_a_shape_no_site_can_run_is_named_before_the_launcher(
        client: TestClient, make_user: MakeUser) -> None:
    user = make_user()
    r = client.post("/api/v1/jobs", json={**SPEC, "resources": {"ranks": 100000}},
                    headers=user.headers)
    assert r.status_code == 422 and "cores" in r.json()["detail"]
    assert "mpi.launcher" not in r.json()["detail"]
