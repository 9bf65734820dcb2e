"""LIVE (this machine): GA4GH TES tasks survive `kill -9` of the gateway (issue 30, item 7)
with each run exactly once. py-tes creates the tasks on a real `gridgate serve` (a child
process, the worker inside it); they run on the local site with ch-run, each appending
its job tag to a file in its job directory and then waiting to be let go (the file `go`,
which the test writes: no sleep races the machine). The gateway is killed while some run
and the others wait at the gateway; some are let go while it is down; once restarted,
every task ends COMPLETE, each job has one attempt and one COMPLETED event, and each tag
was written once."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest
import tes

from adapters.local.files import JobFiles
from gateway.runtime import Runtime
from gateway.settings import Settings
from tests.conftest import MakeUser
from tests.containers.conftest import need
from tests.registry.fixture import Registry
from tests.waiting_jobs import let_all_go, let_go, local_job_dirs
from tests.worker.gateway_process import GatewayProcess, free_port
from tests.worker.test_crash_recovery import assert_exactly_once, env_for, wait_for

TASKS = 8
RUNNING = 5  # the local site's cap: the others wait at the gateway when it is killed
# In the container the job directory is /mnt/0 (ch-run's bind).
RUN = ('echo "$GRIDGATE_JOB_TAG" >> /mnt/0/executions; '
       'while [ ! -e /mnt/0/go ]; do sleep 0.2; done')


@pytest.mark.parametrize("database_kind", ["sqlite"], indirect=True)
def test_tes_tasks_survive_kill9_each_run_once(
        settings: Settings, runtime: Runtime, make_user: MakeUser, registry: Registry,
        image: str, tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("the local site runs containers when the gateway runs as root")
    need("ch-run")
    user = make_user()
    gateway = GatewayProcess(env_for(settings, GRIDGATE_PORT=str(free_port()),
                                     GRIDGATE_LOCAL_SITE_MAX_JOBS=str(RUNNING),
                                     GRIDGATE_INSECURE_REGISTRIES=registry.host),
                             tmp_path / "gateway.log")
    jobs_dir = settings.jobs_dir
    gateway.start()
    try:
        client = tes.HTTPClient(gateway.url, token=user.token, timeout=30)
        ids = [client.create_task(tes.Task(name=f"crash-{i}", executors=[tes.Executor(
            image=image, command=["/bin/sh", "-c", RUN])])) for i in range(TASKS)]

        def states() -> Counter[str]:
            return Counter(client.get_task(i, "MINIMAL").state for i in ids)

        wait_for(lambda: states()["RUNNING"] == RUNNING, f"{RUNNING} running tasks")
        assert states() == Counter({"RUNNING": RUNNING, "QUEUED": TASKS - RUNNING})
        gateway.kill9()
        running = local_job_dirs(jobs_dir)
        assert len(running) == RUNNING
        for workdir in running[:2]:  # these end while the gateway is down
            let_go(workdir)
        wait_for(lambda: all(JobFiles(w).result.exists() for w in running[:2]),
                 "2 tasks ended while the gateway was down")
        gateway.start()

        def all_complete() -> bool:
            let_all_go(jobs_dir)  # the rest, and each task as it starts
            return states()["COMPLETE"] == TASKS

        wait_for(all_complete, f"all {TASKS} complete")
    finally:
        gateway.stop()
        let_all_go(jobs_dir)  # none left waiting if the test failed
    assert_exactly_once(runtime, TASKS)
