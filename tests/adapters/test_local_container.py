"""The local site runs a container job's launch line as it is, without a shell."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.base import ContainerLaunch, MpiRequest, SubmitRequest
from adapters.errors import SubmitRejected
from adapters.local.launch import LaunchConfig, build_plan

CONFIG = LaunchConfig(mpiexec="mpiexec", path="/usr/bin:/bin", home=None, lang="C.UTF-8",
                      kill_grace_seconds=1.0)
LINE = ("ch-run", "-b", "/w:/mnt/0", "-c", "/mnt/0", "/w/.gridgate-image", "--", "./app", "$x")


def request(**kw: object) -> SubmitRequest:
    base: dict[str, object] = {"tag": "gw-1", "workdir": "/w", "argv": ["./app", "$x"],
                               "container": ContainerLaunch(LINE)}
    return SubmitRequest(**(base | kw))  # type: ignore[arg-type]


def test_the_plan_runs_the_launch_line(tmp_path: Path) -> None:
    plan = build_plan(request(), "1", tmp_path, tmp_path / "script", CONFIG)
    assert plan.argv == LINE


@pytest.mark.parametrize(("change", "says"), [
    ({"mpi": MpiRequest("mpirun")}, "launch line"),
    ({"container": ContainerLaunch(LINE, (("apptainer", "pull"),))}, "preparing commands"),
    ({"container": ContainerLaunch(("",))}, "must name a program"),
])
def test_refusals(change: dict[str, object], says: str, tmp_path: Path) -> None:
    with pytest.raises(SubmitRejected, match=says):
        build_plan(request(**change), "1", tmp_path, tmp_path / "script", CONFIG)
