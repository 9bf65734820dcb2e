"""README "Add a routing policy": a policy written in one module (toy_policy.py) and
registered by one line is a word of the job spec, routes and is explained through the
API, and runs in `gridgate simulate`, with no other edit. Every place that branched on
a policy name before the registry would refuse `slowest` or route it as `fastest`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from rich.console import Console
from typer.testing import CliRunner

from gateway.cli.main import app
from gateway.cli.routing import candidates_table
from gateway.cli.simulate import DEFAULT_POLICY
from gateway.domain.jobspec import JobSpec
from gateway.runtime import Runtime
from gateway.scheduling.evaluation import simulation
from gateway.scheduling.policies import registry
from gateway.worker.context import StepContext
from gateway.worker.route import route_jobs
from tests.conftest import MakeUser
from tests.scheduling import toy_policy
from tests.worker.test_routing_step import SPEC, observed_waits, twin_runtime
from tests.worker.test_worker_local import post

DATA = Path(__file__).parent / "data"
TRACES = [arg for site in "abc" for arg in ("--trace", str(DATA / f"federation_{site}.swf"))]


@pytest.fixture
def slowest(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The toy registered, as its one line in registry.REGISTERED would."""
    monkeypatch.setattr(registry, "REGISTERED", (*registry.REGISTERED, toy_policy.POLICY))
    yield toy_policy.POLICY.name


def simulate(policy: str) -> dict[str, object]:
    result = CliRunner().invoke(app, ["simulate", *TRACES, "--policy", policy, "--json",
                                      "--window-days", "0"])
    assert result.exit_code == 0, result.output
    summary: dict[str, object] = json.loads(result.stdout)
    return summary


def test_an_unregistered_policy_is_nowhere() -> None:
    assert "slowest" not in registry.names()
    assert "slowest" not in simulation.policy_names()
    assert CliRunner().invoke(app, ["simulate", *TRACES, "--policy", "slowest"]).exit_code == 2
    assert JobSpec.model_json_schema()["$defs"]["RoutingPolicy"]["enum"] == [
        "fastest", "deadline", "cheapest", "pinned"]
    assert DEFAULT_POLICY == registry.DEFAULT  # the CLI's default, named without loading it


def test_a_registered_policy_runs_in_the_simulator(slowest: str) -> None:
    assert simulation.policy_names() == ("own", "fewest-queued", "fastest", "slowest")
    shown = CliRunner().invoke(app, ["simulate", "--help"], env={"COLUMNS": "200"}).stdout
    assert "<own|fewest-queued|fastest|slowest>" in shown
    toy, fastest = simulate(slowest), simulate("fastest")
    assert (toy["policy"], toy["forecast_mode"]) == ("slowest", "combined")
    # Routed by the toy, not by `fastest`: the jobs wait longer and go elsewhere more.
    toy_overall, fastest_overall = toy["overall"], fastest["overall"]
    assert isinstance(toy_overall, dict) and isinstance(fastest_overall, dict)
    assert toy_overall["mean_wait_s"] > fastest_overall["mean_wait_s"]
    assert toy["origins"] != fastest["origins"]


def test_a_registered_policy_is_in_the_job_spec(slowest: str) -> None:
    schema = JobSpec.model_json_schema()
    assert schema["$defs"]["RoutingPolicy"]["enum"][-1] == slowest
    description = schema["$defs"]["Routing"]["properties"]["policy"]["description"]
    assert description.endswith("; slowest: the site with the latest predicted completion.")
    # No deadline: the toy takes none, so the spec refuses one with it.
    assert JobSpec.model_validate({**SPEC, "routing": {"policy": slowest}}).routing.policy == (
        slowest)


def test_a_registered_policy_routes_and_is_explained(
        slowest: str, client: TestClient, runtime: Runtime, make_user: MakeUser) -> None:
    user = make_user()
    spec = {**SPEC, "routing": {"policy": slowest}}
    job_id = post(client, user.headers, spec)
    twins = twin_runtime(runtime)
    # The twin's queue waited 90 minutes 60 times: it finishes last, so the toy picks it
    # (`fastest` picks local: test_routing_step.py).
    earlier = post(client, user.headers, {**SPEC, "site": "local"})
    observed_waits(runtime, earlier, "twin", [5400.0] * 60, 1)
    # The API's estimate (it knows the local site only) says why in the toy's words.
    estimate = client.post("/api/v1/jobs:estimate", headers=user.headers, json=spec)
    assert estimate.status_code == 200, estimate.text
    assert estimate.json()["policy"] == slowest
    assert estimate.json()["why"].startswith("Site 'local' has the latest predicted completion")

    assert route_jobs(StepContext.of(twins, "w")) is True
    placed = client.get(f"/api/v1/jobs/{job_id}/placement", headers=user.headers)
    assert placed.status_code == 200, placed.text
    decision = placed.json()
    assert (decision["policy"], decision["chosen"], decision["why"]) == (
        slowest, ["twin"], "Site 'twin' has the latest predicted completion (1.5 h, 95% "
                           "bound 1.5 h).")
    assert [c["site"] for c in decision["candidates"]] == ["twin", "local"]
    # `gridgate explain` prints that document: the twin chosen, local a candidate.
    table = Console(width=200, record=True, color_system=None)
    table.print(candidates_table(decision))
    rows = [line.split()[:2] for line in table.export_text().splitlines()[1:]]
    assert rows == [["twin", "chosen"], ["local", "candidate"]]
