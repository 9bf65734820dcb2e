"""The local site runs a container job's launch line as it is, without a shell, and its
sandbox shows the job the image unpacked in the site's cache, nothing else of the site."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from adapters.base import ContainerLaunch, MpiRequest, SubmitRequest
from adapters.errors import SubmitRejected
from adapters.local.launch import LaunchConfig, build_plan
from adapters.local.records import LaunchPlan

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


SHA = "ab" * 32


def test_an_image_unpacked_in_the_site_cache_is_read(tmp_path: Path) -> None:
    root = tmp_path.resolve()
    unpacked = f"{root}/.gridgate-cache/{SHA}.d"
    config = dataclasses.replace(CONFIG, root=root)
    plan = build_plan(request(container=ContainerLaunch(LINE, reads=(unpacked,))), "1",
                      root / "w", root / "script", config)
    assert plan.reads == (unpacked,)
    assert LaunchPlan.from_json(plan.to_json()).reads == (unpacked,)


@pytest.mark.parametrize("path", [
    "{root}/other-job", "{root}/gw-2/{sha}.d", "{root}/.gridgate-cache/{sha}.d/../../w2",
    "{root}/{sha}.d",
    "{root}/.gridgate-cache/sub/{sha}.d", "relative/{sha}.d", "/etc/{sha}.d",
    "{root}/.gridgate-cache/{sha}.d\n",
])
def test_nothing_else_of_the_site_is_read(path: str, tmp_path: Path) -> None:
    root = tmp_path.resolve()
    config = dataclasses.replace(CONFIG, root=root)
    launch = ContainerLaunch(LINE, reads=(path.format(root=root, sha=SHA),))
    with pytest.raises(SubmitRejected, match="may read only an image unpacked"):
        build_plan(request(container=launch), "1", root / "w", root / "script", config)
