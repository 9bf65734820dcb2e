"""What POST /jobs refuses about inputs and outputs before accepting a job: the path
suite (422 naming the field), other users' uploads, per-job limits (413)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from gateway.settings import Settings
from tests.conftest import MakeUser
from tests.staging.helpers import sh, upload

UPLOAD = "upload:00000000-0000-4000-8000-000000000000"


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"job_input_max_files": 3,
                                       "job_input_max_bytes": 1000})


def refused(client: TestClient, headers: dict[str, str], over: dict[str, Any],
            status: int = 422) -> dict[str, Any]:
    r = client.post("/api/v1/jobs", json={"name": "x", **sh("true"), **over}, headers=headers)
    assert r.status_code == status, (over, r.text)
    assert r.headers["content-type"] == "application/problem+json"
    body: dict[str, Any] = r.json()
    return body


def fields(body: dict[str, Any]) -> list[str]:
    return [e["field"] for e in body.get("errors", [])] + [body.get("field", "")]


@pytest.mark.parametrize(("dest", "message"), [
    ("../x", "'..'"),
    ("a/../../x", "'..'"),
    ("/etc/passwd", "not absolute"),
    ("a\x00b", "NUL"),
    ("", "at least 1 character"),
    ("a//b", "empty"),
    ("./a", "'.'"),
    ("dir/", "empty"),
    (".gridgate/request.json", "control directory"),
    ("a\nb", "control characters"),
])
def test_bad_dest_is_422_naming_the_field(client: TestClient, make_user: MakeUser,
                                          dest: str, message: str) -> None:
    user = make_user()
    body = refused(client, user.headers, {"inputs": [
        {"source": UPLOAD, "dest": "fine"}, {"source": UPLOAD, "dest": dest}]})
    assert "inputs[1].dest" in fields(body), body
    assert message in body["detail"], body


@pytest.mark.parametrize("glob", ["../*", "/etc/*", "a/**/../b", "x\x00", ".gridgate/*"])
def test_bad_output_glob_is_422(client: TestClient, make_user: MakeUser, glob: str) -> None:
    body = refused(client, make_user().headers, {"outputs": ["*.txt", glob]})
    assert "outputs[1]" in fields(body), body


@pytest.mark.parametrize("source", [
    "file:///etc/passwd", "http://example.org/x", "ftp://example.org/x", "/etc/passwd",
    "upload:not-a-uuid", "site://local", "site://local/", "site://local/a/../etc/passwd",
    "site://Bad_Name/x", "https://user:pw@example.org/x", "https:///nohost",
])
def test_bad_source_is_422(client: TestClient, make_user: MakeUser, source: str) -> None:
    body = refused(client, make_user().headers, {"inputs": [{"source": source, "dest": "x"}]})
    assert "inputs[0].source" in fields(body), body


def test_duplicate_or_nested_dests_are_422(client: TestClient, make_user: MakeUser) -> None:
    user = make_user()
    data = upload(client, user, b"abc")
    src = f"upload:{data}"
    for dests in (["a", "b", "a"], ["d/x", "d"], ["d", "c", "d/x"]):
        body = refused(client, user.headers,
                       {"inputs": [{"source": src, "dest": d} for d in dests]})
        assert body["field"] == "inputs[2].dest" or body["field"] == "inputs[1].dest", body
        assert "collides" in body["detail"]


def test_others_uploads_read_like_missing_ones(client: TestClient, make_user: MakeUser
                                               ) -> None:
    owner, other = make_user(), make_user()
    theirs = upload(client, owner, b"private bytes")
    missing = "11111111-1111-4111-8111-111111111111"
    answers = []
    for upload_id in (theirs, missing):
        body = refused(client, other.headers,
                       {"inputs": [{"source": f"upload:{upload_id}", "dest": "x"}]})
        assert body["field"] == "inputs[0].source"
        answers.append(body["detail"].replace(upload_id, "ID"))
    assert answers[0] == answers[1]
    unfinished = upload(client, other, b"half", complete=False)
    body = refused(client, other.headers,
                   {"inputs": [{"source": f"upload:{unfinished}", "dest": "x"}]})
    assert "not complete" in body["detail"] and body["field"] == "inputs[0].source"


def test_unknown_site_source_is_422(client: TestClient, make_user: MakeUser) -> None:
    body = refused(client, make_user().headers,
                   {"inputs": [{"source": "site://nowhere/data/x", "dest": "x"}]})
    assert body["field"] == "inputs[0].source" and "nowhere" in body["detail"]


def test_per_job_limits_are_413_saying_which_and_by_how_much(
        client: TestClient, make_user: MakeUser) -> None:
    user = make_user()
    small = upload(client, user, b"s" * 400)
    body = refused(client, user.headers, {"inputs": [
        {"source": f"upload:{small}", "dest": f"f{i}"} for i in range(5)]}, status=413)
    assert body["limit"] == "job_input_max_files" and body["excess"] == 2
    assert "over the per-job limit of 3 (job_input_max_files) by 2" in body["detail"]
    body = refused(client, user.headers, {"inputs": [
        {"source": f"upload:{small}", "dest": f"f{i}"} for i in range(3)]}, status=413)
    assert body["limit"] == "job_input_max_bytes" and body["excess"] == 200
    assert "by 200 bytes" in body["detail"]
    ok = client.post("/api/v1/jobs", json={"name": "ok", **sh("true"), "inputs": [
        {"source": f"upload:{small}", "dest": f"f{i}"} for i in range(2)]},
        headers=user.headers)
    assert ok.status_code == 202, ok.text


def test_schema_has_the_staging_fields(client: TestClient) -> None:
    schema = client.get("/api/v1/schemas/job-spec").json()
    props = schema["properties"]
    assert {"inputs", "outputs", "outputs_mode"} <= set(props)
    assert set(schema["$defs"]["Input"]["properties"]) == {"source", "dest"}
    assert schema["$defs"]["OutputsMode"]["enum"] == ["fetch", "keep"]


def test_deliveries_go_only_to_the_user_s_directories(
        client: TestClient, make_user: MakeUser, settings: Settings, tmp_path: Path) -> None:
    (tmp_path / "users/ann").mkdir(parents=True)
    settings.file_url_dirs = f"{tmp_path}/users/{{user}}"
    ann, ben = make_user("ann"), make_user("ben")
    mine = {"deliver": [{"glob": "out.txt", "url": f"file://{tmp_path}/users/ann/out.txt"},
                        {"glob": "res/**", "strip": "res",
                         "url": f"file://{tmp_path}/users/ann/"}]}
    accepted = client.post("/api/v1/jobs", json={"name": "x", **sh("true"), **mine},
                           headers=ann.headers)
    assert accepted.status_code == 202, accepted.text
    body = refused(client, ben.headers, mine)
    assert fields(body) == ["deliver[0].url"] and "outside the directories" in body["detail"]
    body = refused(client, ann.headers, {"deliver": [
        {"glob": "o", "url": f"file://{tmp_path}/users/ann/../ben/o"}]})
    assert fields(body)[0] == "deliver[0]" and "normalised" in body["errors"][0]["message"]
    body = refused(client, ann.headers, {"deliver": [
        {"glob": "o", "url": "site://local/tmp/o"}]})
    assert fields(body) == ["deliver[0].url"] and "file:// URL" in body["detail"]


def test_a_container_binds_only_its_owner_s_own_file_url_directory(
        client: TestClient, make_user: MakeUser, settings: Settings, tmp_path: Path) -> None:
    for name in ("ann", "ben"):
        (tmp_path / "users" / name / "sub").mkdir(parents=True)
    settings.file_url_dirs = f"{tmp_path}/users/{{user}}"
    ann = make_user("ann")

    def bind(src: str) -> dict[str, Any]:
        return {"container": {"image": "docker://alpine:3.20",
                              "binds": [{"src": "data", "dst": "/data"},
                                        {"src": src, "dst": "/shared"}]}}

    # Through a link to the area, too (it is compared resolved).
    (tmp_path / "link").symlink_to(tmp_path / "users")
    for src in (f"{tmp_path}/users/ben", f"{tmp_path}/users/ann/sub", f"{tmp_path}/users",
                f"{tmp_path}/link/ben"):
        body = refused(client, ann.headers, bind(src))
        assert fields(body) == ["container.binds[1].src"], body
        assert f"yours: {tmp_path}/users/ann)" in body["detail"], body
    # Her own, whole, passes this check; no site here mounts it, which routing says.
    body = refused(client, ann.headers, bind(f"{tmp_path}/users/ann"))
    assert "No site can run this job" in body["detail"], body
