"""LIVE (this machine): the GA4GH client `py-tes` (1.1, from the registry) drives a real
gateway over HTTP (uvicorn, the worker running) end to end: service-info, a task created,
followed to COMPLETE and read in the FULL view, one of three executors (one in an image
of its own, failing, ignored) reading an input by URL and sending an output back
(file:// URLs in the user's shared directory), the listing, and a running task
cancelled.
The tasks run on the embedded default's local site with ch-run (the gateway runs as root),
their image pulled by the gateway from the project's real test registry."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import tes

from gateway.auth.accounts import create_local_user
from gateway.auth.tokens import issue_access_token
from gateway.db.engine import transaction
from tests.client.live import LiveGateway, serve_gateway
from tests.conftest import ALL_SCOPES
from tests.containers.conftest import make_rootfs, need
from tests.registry.fixture import Registry, push_image
from tests.registry.test_registry_run_live import tree_layer

# Which image runs it (only the tools image has sleep), and then a failure.
SAY_IMAGE = ("if [ -e /bin/sleep ]; then echo tools; else echo shell; fi > /vol/shared/which; "
             "exit 3")


@pytest.fixture
def gateway(registry: Registry, tmp_path: Path) -> Iterator[LiveGateway]:
    if os.geteuid() != 0:
        pytest.skip("the local site runs containers when the gateway runs as root")
    need("ch-run")
    need("unsquashfs")
    (tmp_path / "shared/ada").mkdir(parents=True)
    with serve_gateway(tmp_path / "data", insecure_registries=registry.host,
                       file_url_dirs=f"{tmp_path}/shared/{{user}}") as live:
        yield live


def client_of(gateway: LiveGateway) -> tes.HTTPClient:
    with transaction(gateway.runtime.sessions) as session:
        user_id = create_local_user(session, "ada", "correct horse battery").id
    token = issue_access_token(gateway.settings, gateway.runtime.keys, subject=user_id,
                               client_id="py-tes", scope=ALL_SCOPES, username="ada").token
    return tes.HTTPClient(gateway.url, token=token, timeout=30)


def until(client: tes.HTTPClient, task_id: str, state: str) -> None:
    deadline = time.monotonic() + 180
    while client.get_task(task_id, "MINIMAL").state != state:
        assert time.monotonic() < deadline, client.get_task(task_id, "FULL")
        time.sleep(0.2)


def test_py_tes_runs_lists_and_cancels_tasks(gateway: LiveGateway, image: str,
                                             registry: Registry, tmp_path: Path) -> None:
    client = client_of(gateway)
    info = client.get_service_info()
    assert info.type["artifact"] == "tes" and info.type["version"].startswith("1.1")

    done_id = client.create_task(tes.Task(name="greet", executors=[tes.Executor(
        image=image, command=["/bin/sh", "-c", 'echo "$GREETING from $WHO"'],
        env={"WHO": "py-tes"})]))
    done = client.wait(done_id, timeout=180)
    assert done.state == "COMPLETE", done
    full = client.get_task(done_id, "FULL")
    assert full.logs[0].logs[0].exit_code == 0
    assert full.logs[0].logs[0].stdout == "hello from py-tes\n"  # read from the site
    assert full.executors[0].image == image

    # An input by URL and an output back, in the directory the admin declared for ada.
    shared = tmp_path / "shared/ada"
    (shared / "name.txt").write_text("Ada\n")
    # Three executors in order, sharing the task's files and a volume; the second, in an
    # image of its own, fails, ignored.
    push_image(registry, "lab/shell", "1", [tree_layer(make_rootfs(tmp_path / "shell"))], [])
    shell = f"{registry.host}/lab/shell:1"
    file_id = client.create_task(tes.Task(
        name="files", executors=[
            tes.Executor(image=image, command=[
                "/bin/sh", "-c", 'read -r n < /io/name.txt; echo "hi $n" > /vol/shared/p']),
            tes.Executor(image=shell, command=["/bin/sh", "-c", SAY_IMAGE], ignore_error=True),
            tes.Executor(image=image, command=["/bin/sh", "-c", 'read -r g; read -r w < '
                                               '/vol/shared/which; echo "$g ($w)"'],
                         stdin="/vol/shared/p", stdout="/io/greeting.txt")],
        volumes=["/vol/shared"],
        inputs=[tes.Input(url=f"file://{shared}/name.txt", path="/io/name.txt")],
        outputs=[tes.Output(url=f"file://{shared}/out/greeting.txt",
                            path="/io/greeting.txt")]))
    assert client.wait(file_id, timeout=180).state == "COMPLETE"
    assert (shared / "out/greeting.txt").read_text() == "hi Ada (shell)\n"
    basic = client.get_task(file_id, "BASIC")
    assert [e.image for e in basic.executors] == [image, shell, image]
    assert [e.command[2] for e in basic.executors] == [
        'read -r n < /io/name.txt; echo "hi $n" > /vol/shared/p', SAY_IMAGE,
        'read -r g; read -r w < /vol/shared/which; echo "$g ($w)"']
    (log,) = basic.logs
    assert [e.exit_code for e in log.logs] == [0, 3, 0]
    assert [(o.path, o.url, o.size_bytes) for o in log.outputs] == [
        ("/io/greeting.txt", f"file://{shared}/out/greeting.txt", 15)]

    held_id = client.create_task(tes.Task(name="held", executors=[tes.Executor(
        image=image, command=["sleep", "600"])]))
    until(client, held_id, "RUNNING")
    client.cancel_task(held_id)
    # py-tes's own `wait` stops at CANCELING (TES 1.1 added it; py-tes 1.1.4 counts every
    # state but QUEUED, INITIALIZING and RUNNING as the end): follow it to CANCELED.
    assert client.get_task(held_id, "MINIMAL").state in ("CANCELING", "CANCELED")
    until(client, held_id, "CANCELED")

    listed = client.list_tasks(view="MINIMAL")
    assert {t.id for t in listed.tasks} == {done_id, file_id, held_id}
    assert {t.state for t in listed.tasks} == {"COMPLETE", "CANCELED"}
