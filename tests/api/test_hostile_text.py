"""Hostile user text at POST /api/v1/jobs: each refused with a 422 problem naming the field.

Every kind of text checked against a pattern, ending in a newline (Python's `$` matches
before a final newline: "LD_PRELOAD\\n" passed `^...$` checks); scheduler directives in a
script that would pick the account, queue or identity; staging paths starting with `~`.
"""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.conftest import MakeUser

SPEC = {"name": "hostile", "executable": "/bin/echo", "args": ["hi"]}
URL = "https://example.org/data.bin"

TRAILING_NEWLINE = [
    ({"environment": {"LD_PRELOAD\n": "/tmp/x.so"}}, "environment"),
    ({"environment": {"GREETING\n": "hi"}}, "environment"),
    ({"labels": {"team\n": "a"}}, "labels"),
    ({"partition": "debug\n"}, "partition"),
    ({"site": "local\n"}, "site"),
    ({"resources": {"walltime": "1:00:00\n"}}, "resources.walltime"),
    ({"resources": {"walltime": "3600\n"}}, "resources.walltime"),
    ({"mpi": {"launcher": "mpirun", "flavor": "mpich\n"}}, "mpi.flavor"),
    ({"inputs": [{"source": "site://local\n/etc/hosts", "dest": "hosts"}]}, "inputs[0].source"),
    ({"inputs": [{"source": URL, "dest": "data\n"}]}, "inputs[0].dest"),
    ({"outputs": ["*.out\n"]}, "outputs[0]"),
    ({"container": {"image": "docker://ubuntu:22.04\n"}}, "container.image"),
    ({"container": {"image": "docker://ubuntu", "environment": {"LD_PRELOAD\n": "x"}}},
     "container.environment"),
    ({"container": {"image": "docker://ubuntu", "binds": [{"src": "in\n", "dst": "/in"}]}},
     "container.binds[0].src"),
    ({"mpi": {"launcher": "mpirun", "flavor": "mpich"},
      "container": {"image": "docker://ubuntu", "mpi_version": "4.0.2\n"}},
     "container.mpi_version"),
]

DIRECTIVES = [
    ("#!/bin/sh\n#SBATCH --account=other\nhostname\n", "script line 2 '#SBATCH --account=other'"),
    ("#!/bin/sh\n#SBATCH --mail-type=END\n#SBATCH -q high\nhostname\n",
     "script line 3 '#SBATCH -q high'"),
    ("#SBATCH --reservation=maint\nhostname\n", "script line 1 '#SBATCH --reservation=maint'"),
    # Grid Engine and LSF read directives anywhere in the script.
    ("#!/bin/sh\nhostname\n#$ -P physics\n", "script line 3 '#$ -P physics'"),
    ("#!/bin/sh\nhostname\n\n#BSUB -G admins\n", "script line 4 '#BSUB -G admins'"),
    ("#!/bin/sh\n#PBS -W group_list=wheel\nhostname\n",
     "script line 2 '#PBS -W group_list=wheel'"),
]

TILDE = [
    ({"inputs": [{"source": URL, "dest": "~/.ssh/authorized_keys"}]}, "inputs[0].dest"),
    ({"inputs": [{"source": URL, "dest": "~root/.bashrc"}]}, "inputs[0].dest"),
    ({"outputs": ["~/.ssh/*"]}, "outputs[0]"),
]


def _refused(client: TestClient, headers: dict[str, str], over: dict[str, object],
             field: str) -> dict[str, Any]:
    r = client.post("/api/v1/jobs", json={**SPEC, **over}, headers=headers)
    assert r.status_code == 422, (over, r.text)
    assert r.headers["content-type"] == "application/problem+json"
    body: dict[str, Any] = r.json()
    fields = [e["field"] for e in body.get("errors", [])]
    assert field in fields, (over, body)
    return body


def test_every_kind_of_text_ending_in_a_newline_is_refused(
        client: TestClient, make_user: MakeUser) -> None:
    user = make_user()
    for over, field in TRAILING_NEWLINE:
        _refused(client, user.headers, over, field)
    assert client.get("/api/v1/jobs", headers=user.headers).json()["items"] == []


@pytest.mark.parametrize(("script", "named"), DIRECTIVES)
def test_directives_that_pick_charge_or_identity_are_refused_naming_the_line(
        client: TestClient, make_user: MakeUser, script: str, named: str) -> None:
    body = _refused(client, make_user().headers,
                    {"executable": None, "args": [], "script": script}, "script")
    assert named in str(body["detail"])


def test_mail_directives_are_accepted(client: TestClient, make_user: MakeUser) -> None:
    script = ("#!/bin/sh\n#SBATCH --mail-type=END,FAIL\n#SBATCH --mail-user=ada@example.org\n"
              "#$ -m e\n#PBS -m e\n#BSUB -N\nhostname\n")
    r = client.post("/api/v1/jobs", json={**SPEC, "executable": None, "args": [],
                                          "script": script}, headers=make_user().headers)
    assert r.status_code == 202, r.text


def test_staging_paths_starting_with_a_tilde_are_refused(
        client: TestClient, make_user: MakeUser) -> None:
    user = make_user()
    for over, field in TILDE:
        body = _refused(client, user.headers, over, field)
        assert "'~'" in str(body["detail"])
