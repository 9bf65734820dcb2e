"""LIVE (testbed): the tasks a workflow engine submitted survive `kill -9` of the gateway
mid-workflow, each run once (issue 30, item 7). Snakemake 9 (tests/api/tes/
snakemake_engine.py) runs a scatter of four rules through a real `gridgate serve` (a child
process, the worker inside it) over roadrunner and galaxy; each task appends its job tag
to a ledger in the shared storage and then waits to be let go (a file the test writes).
While tasks run and others stage or wait, the gateway is killed; the tasks are let go
while it is down; once it is back (and a staging task's lease has run out), the engine
finishes the workflow: every task has one attempt and
one COMPLETED event, and each tag is in the ledger once.

Snakemake's TES executor ends the whole workflow when one status call fails (its
`_wait_thread` hands any exception to the scheduler's error callback), so the engine is
paused (SIGSTOP) at a moment when it holds no connection to the gateway, and resumed
once the gateway is back: the engine sees no outage; the gateway's restart is what is
tested."""

from __future__ import annotations

import os
import shutil
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from gateway.runtime import Runtime
from gateway.settings import Settings
from testbed.state import TestbedInfo
from tests.api.tes.snakemake_engine import (
    VENV,
    federation_area,
    push_snakemake_image,
    start_engine,
    user_token,
)
from tests.registry.fixture import Registry
from tests.worker.gateway_process import GatewayProcess, free_port
from tests.worker.test_crash_recovery import assert_one_attempt_each, env_for, wait_for

SITES = ("roadrunner", "galaxy")
TASKS = 4

SNAKEFILE = """\
rule all:
    input: expand("out/{i}.txt", i=range(config["tasks"]))

rule work:
    output: "out/{i}.txt"
    params: ledger=config["ledger"], go=config["go"]
    shell: 'echo "$GRIDGATE_JOB_TAG" >> {params.ledger}; '
           'while [ ! -e {params.go} ]; do sleep 0.2; done; echo {wildcards.i} > {output}'
"""


def connections(pid: int, port: int) -> int:
    """How many TCP connections the process `pid` has open to the loopback `port`."""
    sockets = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue  # closed meanwhile
        if target.startswith("socket:["):
            sockets.add(target[8:-1])
    count = 0
    for line in Path(f"/proc/{pid}/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        remote_port = int(fields[2].split(":")[1], 16)
        if remote_port == port and fields[9] in sockets:
            count += 1
    return count


@pytest.fixture
def area() -> Iterator[Path]:
    with federation_area() as base:
        yield base


@pytest.mark.timeout(600)
@pytest.mark.parametrize("database_kind", ["sqlite"], indirect=True)
def test_engine_tasks_survive_kill9_each_run_once(
        testbed: TestbedInfo, registry: Registry, settings: Settings, runtime: Runtime,
        area: Path, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    if not (VENV / "bin/snakemake").exists():
        pytest.fail(f"{VENV} is missing: tests/run.sh installs it")
    configs = tmp_path / "site-configs"
    configs.mkdir()
    for name in SITES:
        shutil.copy(Path(testbed.site_configs) / f"{name}.yaml", configs)
    port = free_port()
    gateway = GatewayProcess(env_for(settings, GRIDGATE_PORT=str(port),
                                     GRIDGATE_SITE_CONFIGS_DIR=str(configs),
                                     GRIDGATE_LOCAL_SITE_ENABLED="false",
                                     GRIDGATE_INSECURE_REGISTRIES=registry.host,
                                     GRIDGATE_FILE_URL_DIRS=f"{area}/{{user}}",
                                     # A task staging when the gateway dies is taken up
                                     # again once the dead worker's lease runs out.
                                     GRIDGATE_STAGING_LEASE_SECONDS="45"),
                             tmp_path / "gateway.log")
    image = push_snakemake_image(registry, tmp_path / "root")
    token = user_token(runtime, "ada")
    ledger, go = area / "ada/executions", area / "ada/go"
    gateway.start()
    engine = start_engine(gateway.url, token, image, area / "ada", SNAKEFILE,
                          ["--jobs", str(TASKS), "--config", f"tasks={TASKS}",
                           f"ledger={ledger}", f"go={go}"])
    http = httpx.Client(base_url=gateway.url, timeout=30,
                        headers={"Authorization": f"Bearer {token}"})
    request.addfinalizer(http.close)

    def states() -> list[str]:
        return [j["state"] for j in http.get("/api/v1/jobs", params={"origin": "tes"}
                                             ).json()["items"]]

    try:
        wait_for(lambda: (now := states()) and len(now) == TASKS and "RUNNING" in now,
                 "a running task", deadline=600)
        # Paused where it is not talking to the gateway (a call in flight would fail).
        while True:
            os.kill(engine.pid, signal.SIGSTOP)
            if connections(engine.pid, port) == 0:
                break
            os.kill(engine.pid, signal.SIGCONT)
            time.sleep(0.1)
        gateway.kill9()
        go.touch()  # tasks end while the gateway is down
        gateway.start()
        os.kill(engine.pid, signal.SIGCONT)
        output, _ = engine.communicate(timeout=900)
        assert engine.returncode == 0, output
    finally:
        go.touch()
        if engine.poll() is None:
            os.kill(engine.pid, signal.SIGCONT)
            engine.kill()
            engine.wait()
        gateway.stop()

    assert sorted((area / "ada/storage/out").iterdir()) == [
        area / f"ada/storage/out/{i}.txt" for i in range(TASKS)]
    tags = ledger.read_text().split()
    assert len(tags) == TASKS and len(set(tags)) == TASKS, tags
    assert_one_attempt_each(runtime, TASKS)
