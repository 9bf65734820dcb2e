"""The scheduler registry: one entry per scheduler package, the only switch on its kind."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from adapters import registry
from adapters.base import (
    ArrayRequest,
    Capabilities,
    MpiRequest,
    Resources,
    SubmitRequest,
    batch_submitter,
)
from adapters.batch.adapter import BatchAdapter
from adapters.batch.entry import DialectSettings
from adapters.batch.types import DialectConfig, JobLayout, SchedulerDialect
from adapters.local import LocalAdapter
from adapters.testing import ReplayTransport

ROOT = Path(__file__).resolve().parents[2]
TAG = "gw-0b7e4c1a-1111-4c1a-9a3e-000000000001"
REQUEST = SubmitRequest(tag=TAG, workdir=f"/scratch/{TAG}", argv=["./a.out"],
                        resources=Resources(nodes=2, ranks=4), mpi=MpiRequest("mpirun"))


def _relocated(kind: str, **options: str) -> SchedulerDialect:
    entry = registry.entry(kind)
    return entry.dialect(DialectSettings(
        DialectConfig(default_queue="q"), {name: f"/site/bin/{name}" for name in entry.commands},
        options))


# Options that make a dialect run every command it has (an MPI job on Grid Engine needs a
# parallel environment; PBS reads accounting from a log directory only if given one).
EVERYTHING = {"sge": {"parallel_environment": "mpi"},
              "pbs": {"accounting_dir": "/var/spool/pbs/server_priv/accounting"}}


def _argvs(dialect: SchedulerDialect) -> list[tuple[str, ...]]:
    layout = JobLayout.of(REQUEST.workdir)
    estimate = dialect.estimate_command(REQUEST, layout)
    return [dialect.submit_command(REQUEST, layout).argv, dialect.status_command(["1"]),
            dialect.cancel_command("1"), dialect.queues_command(),
            dialect.queue_jobs_command(), dialect.cores_command(),
            *dialect.find_commands(TAG), *dialect.accounting_commands(["1"]),
            *([estimate.argv] if estimate else []),
            *filter(None, [dialect.qos_command()])]


def test_the_registered_kinds() -> None:
    assert registry.kinds() == ("slurm", "sge", "pbs", "lsf")
    for kind, entry in registry.SCHEDULERS.items():
        assert entry.kind == kind == _relocated(kind).kind


@pytest.mark.parametrize("kind", registry.kinds())
def test_every_scheduler_command_a_dialect_runs_is_one_the_site_config_can_place(
        kind: str) -> None:
    """The registry's command list is what the dialect really runs: none is run by its
    bare name once a site moves them all, and every listed one is used."""
    entry = registry.entry(kind)
    words = {word for argv in _argvs(_relocated(kind, **EVERYTHING.get(kind, {})))
             for word in argv}
    assert not words & set(entry.commands), words & set(entry.commands)
    used = {w.removeprefix("/site/bin/") for w in words if w.startswith("/site/bin/")}
    # srun is started by the batch script (mpi.launcher: srun), never on the login node.
    assert used | entry.launchers == set(entry.commands)


def test_a_dialect_takes_only_its_own_settings() -> None:
    pbs = registry.entry("pbs")
    with pytest.raises(ValueError, match="not pbs settings: sbatch"):
        pbs.dialect(DialectSettings(commands={"sbatch": "/usr/bin/sbatch"}))
    with pytest.raises(ValueError, match="not pbs settings: parallel_environment"):
        pbs.dialect(DialectSettings(options={"parallel_environment": "mpi"}))
    with pytest.raises(registry.UnknownScheduler, match="known: slurm, sge, pbs, lsf"):
        registry.entry("torque")


def test_options_reach_the_dialect() -> None:
    sge = registry.dialect("sge", DialectSettings(options={"parallel_environment": "mpi"}))
    argv = sge.submit_command(REQUEST, JobLayout.of(REQUEST.workdir)).argv
    assert argv[argv.index("-pe"):argv.index("-pe") + 3] == ("-pe", "mpi", "4")
    lsf = registry.dialect("lsf", DialectSettings(options={"memory_requests": False}))
    memory = SubmitRequest(tag=TAG, workdir=REQUEST.workdir, argv=["x"],
                           resources=Resources(memory_mb=1024))
    assert not any("rusage" in w for w in lsf.submit_command(
        memory, JobLayout.of(REQUEST.workdir)).argv)
    # One option name means one thing in every scheduler that takes it.
    assert set(registry.options()) == {"parallel_environment", "memory_resource", "pbs_server",
                                       "keep_files", "accounting_dir", "memory_requests",
                                       "max_array_size", "scratch_resource"}
    # Issue 16: a Slurm site's MaxArraySize bounds its native arrays.
    slurm = registry.dialect("slurm", DialectSettings(options={"max_array_size": "10001"}))
    assert slurm.array_fits(ArrayRequest((0, 5000)))
    assert not registry.dialect("slurm", DialectSettings()).array_fits(ArrayRequest((0, 5000)))
    # Issue 13: LSF reads its lsb.acct from an accounting directory too (usage records).
    assert [e.kind for e in registry.offering_option("accounting_dir")] == ["pbs", "lsf"]
    assert [e.kind for e in registry.offering_option("scratch_resource")] == ["sge", "pbs"]
    scratch = SubmitRequest(tag=TAG, workdir=REQUEST.workdir, argv=["x"],
                            resources=Resources(scratch_mb=512))
    sge_tmp = registry.dialect("sge", DialectSettings(options={"scratch_resource": "tmpfree"}))
    assert "tmpfree=512M" in sge_tmp.submit_command(scratch,
                                                    JobLayout.of(REQUEST.workdir)).argv
    assert [e.kind for e in registry.offering_launcher("srun")] == ["slurm"]


def test_capabilities_are_stated_per_scheduler() -> None:
    # Issue 12: every scheduler's snapshot lists the whole queue; Slurm, PBS Professional
    # and LSF give pending jobs their own start estimate, Grid Engine and TORQUE none.
    # Issue 16: native job arrays everywhere but TORQUE.
    q = Capabilities(queue_snapshot=True, whole_queue=True, queue_start_estimates=True,
                     arrays=True)
    # Issue 13: Slurm and Grid Engine give usage records (sacct, qacct); PBS and LSF only
    # from an accounting directory the site names.
    assert _relocated("slurm").capabilities == Capabilities(
        queue_snapshot=True, start_estimate=True, accounting=True, usage=True,
        whole_queue=True, queue_start_estimates=True, arrays=True)
    assert _relocated("sge").capabilities == Capabilities(queue_snapshot=True, accounting=True,
                                                          usage=True, whole_queue=True,
                                                          arrays=True)
    assert _relocated("lsf").capabilities == q
    # PBS reads accounting only from a log directory the site names.
    assert _relocated("pbs").capabilities == q
    with_log = registry.dialect("pbs", DialectSettings(
        options={"accounting_dir": "/var/spool/pbs/server_priv/accounting"}))
    assert with_log.capabilities == Capabilities(queue_snapshot=True, accounting=True,
                                                 usage=True, whole_queue=True,
                                                 queue_start_estimates=True, arrays=True)
    torque = registry.dialect("pbs", DialectSettings(options={"pbs_server": "torque"}))
    assert torque.capabilities == Capabilities(queue_snapshot=True, whole_queue=True)


def test_the_adapter_states_batch_submission(tmp_path: Path) -> None:
    adapter = BatchAdapter(ReplayTransport(), _relocated("lsf"))
    assert adapter.capabilities == Capabilities(batch_submit=True, queue_snapshot=True,
                                                whole_queue=True, queue_start_estimates=True,
                                                arrays=True)
    assert adapter.capabilities.names() == ["batch submit", "queue snapshot", "whole queue",
                                            "queue start estimates", "arrays"]
    assert batch_submitter(adapter) is adapter
    local = LocalAdapter(tmp_path, None)
    # Issue 13: the local site's usage records come from its own job records; issue 29:
    # its runners' exits wake the worker.
    assert local.capabilities == Capabilities(usage=True, change_wakes=True)
    assert batch_submitter(local) is None


def _kind_literals(path: Path) -> list[str]:
    kinds = set(registry.kinds())
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and node.value in kinds]


def test_no_code_outside_the_scheduler_packages_names_a_kind() -> None:
    """The registry is the only switch: the gateway and the shared adapter modules read
    it. (The developer testbed, outside the installed package, builds Slurm and Grid
    Engine clusters, so it names them.)"""
    own = {ROOT / "adapters" / kind for kind in registry.kinds()}
    files = [p for p in (*(ROOT / "gateway").rglob("*.py"), *(ROOT / "adapters").rglob("*.py"))
             if not any(d in p.parents for d in own)]
    assert files
    assert [hit for path in files for hit in _kind_literals(path)] == []
