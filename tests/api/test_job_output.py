"""GET /jobs/{id}/logs/{stream} with offsets at and past the end of the output."""

from __future__ import annotations

from fastapi.testclient import TestClient

from gateway.runtime import Runtime
from gateway.worker.loop import Worker
from tests.conftest import MakeUser
from tests.waiting_jobs import waits
from tests.worker.test_worker_local import PY, post, run_until


def test_offset_past_the_end_is_416_once_the_job_has_ended(
    client: TestClient, runtime: Runtime, make_user: MakeUser
) -> None:
    user = make_user()
    job_id = post(client, user.headers, {"name": "out", "executable": PY,
                                         "args": ["-c", "print('out')"]})
    run_until(Worker(runtime), client, user.headers, job_id, {"COMPLETED"})
    url = f"/api/v1/jobs/{job_id}/logs/stdout"
    at_end = client.get(url, params={"offset": 4}, headers=user.headers)
    assert at_end.status_code == 200 and at_end.text == ""
    assert at_end.headers["x-output-size"] == "4"
    # Past the end, up to the largest offset a file can have (the local site used to
    # answer 503 from 2**62 on, where seeking fails).
    for offset in (5, 2**40, 2**62, 2**63 - 1):
        for follow in (False, True):
            past = client.get(url, params={"offset": offset, "follow": follow},
                              headers=user.headers)
            assert past.status_code == 416, (offset, follow, past.text)
            assert past.headers["content-type"] == "application/problem+json"
            assert past.headers["content-range"] == "bytes */4"
            assert "past the end" in past.json()["detail"]
    beyond = client.get(url, params={"offset": 2**63}, headers=user.headers)
    assert beyond.status_code == 422 and beyond.json()["errors"][0]["field"] == "query.offset"


def test_offset_past_the_end_of_a_running_job_is_empty(
    client: TestClient, runtime: Runtime, make_user: MakeUser
) -> None:
    user = make_user()
    worker = Worker(runtime)
    job_id = post(client, user.headers, {"name": "long", "executable": "/bin/sh",
                                         "args": ["-c", waits()]})
    run_until(worker, client, user.headers, job_id, {"RUNNING"})
    try:
        # The output may still get there: nothing yet, not an error.
        for offset in (1, 2**62):
            ahead = client.get(f"/api/v1/jobs/{job_id}/logs/stdout",
                               params={"offset": offset}, headers=user.headers)
            assert ahead.status_code == 200 and ahead.text == "", ahead.text
            assert ahead.headers["x-output-size"] == "0"
    finally:
        client.post(f"/api/v1/jobs/{job_id}/cancel", headers=user.headers)
        run_until(worker, client, user.headers, job_id, {"CANCELLED"})
