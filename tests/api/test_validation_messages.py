"""Validation problems a person can act on (issue 14, item 10): an unknown field gets a
did-you-mean from the fields allowed where it stands, a site name in capitals says site
names are lower case, and pydantic's "Value error, " prefix is gone."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.conftest import MakeUser

SPEC = {"name": "t", "executable": "/bin/true"}


def problems(client: TestClient, headers: dict[str, str], body: object) -> dict[str, str]:
    r = client.post("/api/v1/jobs", json=body, headers=headers)
    assert r.status_code == 422, r.text
    return {e["field"]: e["message"] for e in r.json()["errors"]}


def test_misspelt_fields_get_a_did_you_mean(client: TestClient, make_user: MakeUser) -> None:
    user = make_user()
    found = problems(client, user.headers, {
        "name": "t", "exectuable": "/bin/true", "resources": {"rank": 2},
        "inputs": [{"source": "https://example.org/x", "dset": "x"}]})
    assert found["exectuable"] == "Extra inputs are not permitted; did you mean 'executable'?"
    assert found["resources.rank"] == "Extra inputs are not permitted; did you mean 'ranks'?"
    assert found["inputs[0].dset"] == "Extra inputs are not permitted; did you mean 'dest'?"


def test_an_unrecognisable_field_lists_the_fields_allowed(client: TestClient,
                                                         make_user: MakeUser) -> None:
    user = make_user()
    found = problems(client, user.headers, {**SPEC, "mpi": {"zzz": 1}})
    assert found["mpi.zzz"].startswith(
        "Extra inputs are not permitted; the fields here are launcher")


def test_a_capitalised_site_name_says_site_names_are_lower_case(
        client: TestClient, make_user: MakeUser) -> None:
    user = make_user()
    found = problems(client, user.headers, {**SPEC, "site": "Local"})
    assert found["site"] == ("'Local' is not a valid site name: site names are lower case; "
                             "did you mean 'local'?")
    assert not any(m.startswith("Value error") for m in found.values())
