"""The seed MPI ping-pong (examples/pingpong/pingpong.c), 2 ranks, with MPICH and with
Open MPI, through the REST API on every testbed site (issue 3, item 8).

The sites have no mpi4py, so the C version runs. The gateway has no file staging yet, so
a first job carries the source in its own script (a quoted heredoc: the text is data to
the shell) and compiles it with the flavor's `mpicc` in its job directory; the second job
is the MPI job proper: that binary, launched by the site's `mpirun` for the flavor.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from testbed.state import TestbedInfo
from tests.live.gateway import LiveGateway, live_gateway

SOURCE = Path(__file__).resolve().parents[2] / "examples" / "pingpong" / "pingpong.c"
# Site -> the gateway user who submits there. Community sites take any user (None: a fresh
# one); a mapped site only the users its config maps.
SITES: dict[str, str | None] = {"roadrunner": None, "galaxy": None, "parnass2": "alice"}
FLAVORS = ("mpich", "openmpi")
MAX_BYTES = 1 << 20
# Short batches keep one run to a few seconds on a shared 2-core machine.
PINGPONG_ARGS = ["--max-bytes", str(MAX_BYTES), "--target-seconds", "0.001",
                 "--batches", "3", "--max-repetitions", "2000"]


@pytest.fixture(scope="module")
def gw(testbed: TestbedInfo, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveGateway]:
    with live_gateway(testbed, tuple(SITES), tmp_path_factory.mktemp("mpi")) as gw:
        yield gw


def _run(gw: LiveGateway, headers: dict[str, str], spec: dict[str, Any]
         ) -> tuple[dict[str, Any], str, str]:
    """Submit and drive the worker until the job is final; the job, its stdout and stderr."""
    job_id = gw.submit(headers, spec)
    job = gw.until_final(job_id, deadline=180)
    return job, gw.output(job_id), gw.output(job_id, "stderr")


def _compile_script(flavor: str) -> str:
    source = SOURCE.read_text()
    assert "\nPINGPONG_C\n" not in source
    return "\n".join([
        "set -e",
        "cat > pingpong.c <<'PINGPONG_C'",
        source.rstrip("\n"),
        "PINGPONG_C",
        f"mpicc.{flavor} -O2 -std=c99 -o pingpong pingpong.c",
        'printf "%s\\n" "$PWD/pingpong"',
    ]) + "\n"


@pytest.mark.parametrize("flavor", FLAVORS)
@pytest.mark.parametrize("site", list(SITES))
def test_pingpong_two_ranks(gw: LiveGateway, site: str, flavor: str) -> None:
    headers = gw.token(SITES[site])

    build, out, err = _run(gw, headers, {
        "name": f"build pingpong {flavor}", "site": site,
        "script": _compile_script(flavor), "resources": {"walltime": 300}})
    assert build["state"] == "COMPLETED" and build["exit_code"] == 0, (build, err)
    binary = out.strip().splitlines()[-1]
    assert binary.startswith("/") and binary.endswith("/pingpong"), out

    job, out, err = _run(gw, headers, {
        "name": f"pingpong {flavor}", "site": site,
        "executable": binary, "args": PINGPONG_ARGS,
        "resources": {"nodes": 1, "ranks": 2, "walltime": 300},
        "mpi": {"launcher": "mpirun", "flavor": flavor},
        "labels": {"example": "pingpong"}})
    assert job["state"] == "COMPLETED" and job["exit_code"] == 0, (job, out, err)
    assert job["site"] == site and job["spec"]["mpi"]["flavor"] == flavor

    records = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    expected = [0] + [1 << k for k in range(MAX_BYTES.bit_length())]
    assert [r["bytes"] for r in records] == expected, out
    for record in records:
        assert record["repetitions"] >= 10 and record["batches"] == 3, record
        assert 0 < record["half_round_trip_s"] < 1, record
