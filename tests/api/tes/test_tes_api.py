"""The TES endpoints on the embedded gateway: a task created through TES is a job of its
owner (the native API and TES show the same thing), every document validates against the
published specification, bad input is a 422 naming the field, others' tasks are 404 and
an unauthenticated call is a 401."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from fastapi.testclient import TestClient

from gateway.runtime import Runtime
from gateway.store.blobs import BlobStore
from gateway.worker.loop import Worker
from tests.api.tes.spec import validate
from tests.api.test_container_jobs import offer
from tests.conftest import MakeUser
from tests.staging.helpers import run_until, sh, submit

TES = "/ga4gh/tes/v1"
TASK: dict[str, Any] = {
    "name": "hello",
    "executors": [{"image": "alpine:3.20", "command": ["echo", "$(id)"],
                   "env": {"GREETING": "hi there"}}],
    "resources": {"cpu_cores": 1, "ram_gb": 0.5},
    "tags": {"workflow": "w1"},
}


@pytest.fixture(autouse=True)
def containers(runtime: Runtime) -> None:
    """The local site offers a container runtime (declared: these tests run no task)."""
    offer(runtime, "local")


def create(client: TestClient, headers: dict[str, str], body: dict[str, Any]) -> str:
    created = client.post(f"{TES}/tasks", json=body, headers=headers)
    assert created.status_code == 200, created.text
    task_id: str = created.json()["id"]
    return task_id


def test_service_info_says_what_it_serves(client: TestClient) -> None:
    info = client.get(f"{TES}/service-info").json()
    validate(info, "tesServiceInfo")
    # The GA4GH service-info fields TES's schema takes by reference (not in the file):
    for field in ("id", "name", "type", "organization", "version"):
        assert info[field], field
    assert info["type"] == {"group": "org.ga4gh", "artifact": "tes", "version": "1.1.0"}
    assert "walltime" in info["tesResources_backend_parameters"]


def test_a_task_is_a_job(client: TestClient, make_user: MakeUser) -> None:
    user = make_user()
    task_id = create(client, user.headers, TASK)
    job = client.get(f"/api/v1/jobs/{task_id}", headers=user.headers).json()
    assert job["owner"] == user.principal.display and job["labels"] == {"workflow": "w1"}
    assert job["spec"]["container"]["image"] == "docker://alpine:3.20"
    assert job["spec"]["args"] == ["$(id)"]  # data, never a shell's
    for view in ("MINIMAL", "BASIC", "FULL"):
        task = client.get(f"{TES}/tasks/{task_id}", params={"view": view},
                          headers=user.headers).json()
        validate(task, "tesTask", view)
        assert task["id"] == task_id and task["state"] == "QUEUED"
    basic = client.get(f"{TES}/tasks/{task_id}?view=BASIC", headers=user.headers).json()
    assert basic["executors"][0]["command"] == ["echo", "$(id)"]
    assert basic["executors"][0]["image"] == "alpine:3.20"  # as it was sent
    assert basic["tags"] == {"workflow": "w1"} and basic["name"] == "hello"


def test_list_pages_and_filters(client: TestClient, make_user: MakeUser) -> None:
    user = make_user()
    ids = [create(client, user.headers, {**TASK, "name": f"step-{i}",
                                         "tags": {"run": str(i % 2)}}) for i in range(5)]
    seen: list[str] = []
    token = None
    while True:
        params: dict[str, Any] = {"page_size": 2, "view": "BASIC"}
        if token:
            params["page_token"] = token
        page = client.get(f"{TES}/tasks", params=params, headers=user.headers).json()
        validate(page, "tesListTasksResponse")
        seen += [task["id"] for task in page["tasks"]]
        token = page.get("next_page_token")
        if not token:
            break
    assert seen == ids[::-1]  # newest first, each once
    odd = client.get(f"{TES}/tasks", params={"tag_key": "run", "tag_value": "1"},
                     headers=user.headers).json()
    assert {t["id"] for t in odd["tasks"]} == {ids[1], ids[3]}
    named = client.get(f"{TES}/tasks", params={"name_prefix": "step-4"},
                       headers=user.headers).json()
    assert [t["id"] for t in named["tasks"]] == [ids[4]]
    # A prefix is literal: '%', '_' and '*' match only themselves.
    odd_name = create(client, user.headers, {**TASK, "name": "a_%*b"})
    for prefix, found in (("a_%*", [odd_name]), ("a%", []), ("a*", []), ("step", ids[::-1])):
        listed = client.get(f"{TES}/tasks", params={"name_prefix": prefix},
                            headers=user.headers).json()
        assert [t["id"] for t in listed["tasks"]] == found, prefix
    queued = client.get(f"{TES}/tasks", params={"state": "QUEUED"}, headers=user.headers)
    assert len(queued.json()["tasks"]) == 6
    # A key without a value (none given, or empty) matches that tag whatever its value.
    for params, found in (({"tag_key": "run"}, ids), ({"tag_key": "run", "tag_value": ""}, ids),
                          ({"tag_key": ["run", "run"], "tag_value": ["1"]}, [ids[1], ids[3]]),
                          ({"tag_key": "workflow"}, [odd_name]),
                          ({"tag_key": ["workflow", "run"]}, [])):
        listed = client.get(f"{TES}/tasks", params=params, headers=user.headers).json()
        assert {t["id"] for t in listed["tasks"]} == set(found), params
    extra = client.get(f"{TES}/tasks", params={"tag_key": "run", "tag_value": ["1", "2"]},
                       headers=user.headers)
    assert extra.status_code == 422 and "no more values than keys" in extra.text
    # A job submitted natively is no task in the listing (GET by id still reads it), and
    # the native listing tells the doors apart.
    native = client.post("/api/v1/jobs", headers=user.headers,
                         json={"name": "step-native", "executable": "true"}).json()["id"]
    listed = client.get(f"{TES}/tasks", params={"page_size": 100}, headers=user.headers)
    assert native not in {t["id"] for t in listed.json()["tasks"]}
    assert client.get(f"{TES}/tasks/{native}", headers=user.headers).status_code == 200
    for origin, found in (("tes", {*ids, odd_name}), ("api", {native})):
        jobs = client.get("/api/v1/jobs", params={"origin": origin, "limit": 100},
                          headers=user.headers).json()["items"]
        assert {j["id"] for j in jobs} == found and {j["origin"] for j in jobs} == {origin}
    assert client.get(f"{TES}/tasks", params={"state": "RUNNING"},
                      headers=user.headers).json()["tasks"] == []


def test_cancel(client: TestClient, make_user: MakeUser) -> None:
    user = make_user()
    task_id = create(client, user.headers, TASK)
    cancelled = client.post(f"{TES}/tasks/{task_id}:cancel", headers=user.headers)
    assert (cancelled.status_code, cancelled.json()) == (200, {})
    task = client.get(f"{TES}/tasks/{task_id}", headers=user.headers).json()
    assert task["state"] == "CANCELED"


def test_refusals(client: TestClient, runtime: Runtime, make_user: MakeUser) -> None:
    owner, other = make_user(), make_user()
    task_id = create(client, owner.headers, TASK)
    assert client.get(f"{TES}/tasks/{task_id}", headers=other.headers).status_code == 404
    assert client.post(f"{TES}/tasks/{task_id}:cancel",
                       headers=other.headers).status_code == 404
    unauthenticated = client.get(f"{TES}/tasks")
    assert unauthenticated.status_code == 401
    assert unauthenticated.headers["content-type"] == "application/problem+json"
    for body, field in (
        ({"executors": []}, "executors"),
        ({**TASK, "executors": [{**TASK["executors"][0], "env": {"LD_PRELOAD": "x"}}]},
         "container.environment"),
        ({**TASK, "executors": [{**TASK["executors"][0], "env": {"LD_PRELOAD": "x"}}],
          "inputs": [{"path": "/data/x", "content": "kept only if the task is"}]},
         "container.environment"),
        ({**TASK, "executors": [*TASK["executors"], {"image": "debian:12\n",
                                                      "command": ["true"]}]},
         "container.then[0].image"),
        ({**TASK, "outputs": [{"path": "/data/o", "url": "file:///etc/o"}]}, "file:///etc/o"),
        ({**TASK, "resources": {"backend_parameters": {"VmSize": "x"},
                                "backend_parameters_strict": True}},
         "resources.backend_parameters"),
        # Strict types, as the schema says (schemathesis found 0 taken for false).
        ({**TASK, "resources": {"backend_parameters_strict": 0}}, "backend_parameters_strict"),
        ({**TASK, "resources": {"cpu_cores": "2"}}, "cpu_cores"),
        ({**TASK, "resources": {"ram_gb": "1.5"}}, "ram_gb"),
    ):
        refused = client.post(f"{TES}/tasks", json=body, headers=owner.headers)
        assert refused.status_code == 422, refused.text
        assert field in refused.text, refused.text
    # A refused task stored none of its inline inputs, not even as a file in the store.
    assert client.get("/api/v1/uploads", headers=owner.headers).json()["items"] == []
    store = BlobStore(runtime.settings.store_dir)
    assert not store.has_blob(hashlib.sha256(b"kept only if the task is").hexdigest())


def test_a_cancel_path_is_not_a_task_id(client: TestClient, make_user: MakeUser) -> None:
    user = make_user()
    task_id = create(client, user.headers, TASK)
    # GET of the cancel path is not a read of a task named "ID:cancel": POST only.
    got = client.get(f"{TES}/tasks/{task_id}:cancel", headers=user.headers)
    assert (got.status_code, got.headers["allow"]) == (405, "POST")


def test_a_task_reads_back_as_it_was_sent(client: TestClient, make_user: MakeUser) -> None:
    user = make_user()
    sent = {**TASK, "description": "says hello", "volumes": ["/vol/scratch"],
            "inputs": [{"path": "/data/in.txt", "content": "a line\n", "name": "in"}],
            "outputs": [{"path": "/data/out", "url": "https://store.example.org/out/",
                         "type": "DIRECTORY"}]}
    task_id = create(client, user.headers, sent)
    views = {view: client.get(f"{TES}/tasks/{task_id}", params={"view": view},
                              headers=user.headers).json() for view in ("BASIC", "FULL")}
    for view, task in views.items():
        validate(task, "tesTask", view)
        assert (task["description"], task["volumes"], task["outputs"]) == (
            "says hello", ["/vol/scratch"], [{"path": "/data/out", "type": "DIRECTORY",
                                               "url": "https://store.example.org/out/"}])
    # TES's BASIC view leaves inline content out; FULL has it.
    assert views["BASIC"]["inputs"] == [{"path": "/data/in.txt", "name": "in",
                                         "type": "FILE", "streamable": False}]
    assert views["FULL"]["inputs"][0]["content"] == "a line\n"
    listed = client.get(f"{TES}/tasks?view=BASIC", headers=user.headers).json()["tasks"]
    assert listed[0]["description"] == "says hello" and "content" not in listed[0]["inputs"][0]


def test_a_directory_at_a_site_is_listed_as_the_owners_account(
        client: TestClient, runtime: Runtime, make_user: MakeUser) -> None:
    """A DIRECTORY input from site:// (here a directory a previous job of the owner left
    on the local site) is each regular file below it, listed when the task is created
    under the rules of a site:// file: another user's job directory is refused, as is a
    file given as a directory. The files are then staged like every site:// input."""
    owner, other = make_user(), make_user()
    worker = Worker(runtime)
    seed = submit(client, owner, sh("mkdir -p out/sub && echo a > out/a.txt && "
                                    "echo b > out/sub/b.txt && ln -s a.txt out/link"))
    assert run_until(worker, client, owner, seed)["state"] == "COMPLETED"
    out = runtime.settings.jobs_dir / f"gw-{seed}" / "out"
    task_id = create(client, owner.headers, {**TASK, "inputs": [
        {"path": "/data/in", "url": f"site://local{out}/", "type": "DIRECTORY"}]})
    job = client.get(f"/api/v1/jobs/{task_id}", headers=owner.headers).json()
    assert [(i["source"], i["dest"]) for i in job["spec"]["inputs"]] == [
        (f"site://local{out}/a.txt", "tes/data/in/a.txt"),
        (f"site://local{out}/sub/b.txt", "tes/data/in/sub/b.txt")]
    for user, url, says in (
            (other, f"site://local{out}", "not in one of your own job directories"),
            (owner, f"site://local{out}/a.txt", "is not a directory"),
            (owner, "site://nowhere/data", "Unknown site 'nowhere'"),
            (owner, "site://local/a/../b", "plain absolute file path")):
        refused = client.post(f"{TES}/tasks", headers=user.headers, json={**TASK, "inputs": [
            {"path": "/data/in", "url": url, "type": "DIRECTORY"}]})
        assert refused.status_code == 422, refused.text
        assert says in refused.json()["detail"], refused.text
