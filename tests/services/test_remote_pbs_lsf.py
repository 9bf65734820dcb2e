"""PBS (and TORQUE) and LSF sites through the whole gateway path, on recorded outputs.

PBS Professional / OpenPBS, TORQUE and IBM Spectrum LSF cannot be installed here, so
these tests put `adapters.testing.ReplayTransport` where the SSH transport would be (the
`pool` seam of `SiteRegistry.from_settings`): the API, the database (SQLite and
PostgreSQL), the worker, `BatchAdapter` and the PBS/LSF dialects all run for real, and
the replay checks the exact argv of every command the gateway sends to the site. Each
answer is a fixture under tests/schedulers/fixtures/ whose header names its source
(the PBS and LSF documentation and public source; none is from a live system).

The PBS site is the shipped example site-configs/examples/unm-roadrunner.yaml.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi.testclient import TestClient

from adapters.base import Capabilities
from adapters.batch.adapter import BatchAdapter
from adapters.pbs import PbsDialect
from adapters.ssh.pool import TransportPool
from adapters.testing import Call, Recording, ReplayTransport
from gateway.api.app import create_app
from gateway.runtime import Runtime, build_runtime
from gateway.services.sites.check import Status, check_site, scheduler_checks
from gateway.services.sites.registry import SiteRegistry
from gateway.settings import Settings
from gateway.siteconfig import load_site_config, validate_site_config, with_updates
from gateway.worker.loop import Worker
from tests.conftest import LOOPBACK, MakeUser
from tests.schedulers.recorded import load

EXAMPLES = Path(__file__).resolve().parents[2] / "site-configs" / "examples"
PBS_SITE = "unm-roadrunner"
LSF_SITE = "lsf-example"
TORQUE_SITE = "torque-example"
SCRATCH = "/scratch/gridgate"
PBS_ACCOUNTING = "/var/spool/pbs/server_priv/accounting"
# The script the submit command runs: make the job directories, then exec the submit
# command (adapters.batch.adapter._after_mkdir), every path a positional parameter.
MKDIR_THEN = ('mkdir -p -m 700 -- "$1" "$2" || exit 97; shift 2; exec "$@"',
              "gridgate-submit")
BJOBS_FIELDS = "jobid stat exit_code exit_reason pend_reason start_time finish_time job_name"


def _lsf_config() -> dict[str, Any]:
    """An LSF site in community mode (no seed cluster runs LSF)."""
    data: dict[str, Any] = yaml.safe_load((EXAMPLES / f"{PBS_SITE}.yaml").read_text())
    data.update(name=LSF_SITE, description="An LSF cluster", mpi_flavors=[])
    data["scheduler"] = {"kind": "lsf", "version": "10.1", "bin_dir": "/opt/lsf/bin",
                         "memory_requests": False}
    data["partitions"] = [{"name": "normal", "default": True, "max_nodes": 4,
                           "max_walltime": "24:00:00", "cores_per_node": 16,
                           "memory_mb_per_node": 64000}]
    return data


def _torque_config() -> dict[str, Any]:
    """The PBS example as a TORQUE server (`pbs_server: torque`)."""
    data: dict[str, Any] = yaml.safe_load((EXAMPLES / f"{PBS_SITE}.yaml").read_text())
    data.update(name=TORQUE_SITE, description="A TORQUE cluster")
    data["scheduler"] = {"kind": "pbs", "pbs_server": "torque", "version": "6.1.3",
                         "bin_dir": "/opt/pbs/bin"}
    return data


@dataclass
class Sites:
    runtime: Runtime
    client: TestClient
    transport: ReplayTransport
    worker: Worker


@pytest.fixture
def sites(settings: Settings, tmp_path: Path) -> Iterator[Sites]:
    """The gateway with the PBS and LSF sites only, reached through one ReplayTransport."""
    configs = tmp_path / "site-configs"
    configs.mkdir()
    shutil.copy(EXAMPLES / f"{PBS_SITE}.yaml", configs)
    (configs / f"{LSF_SITE}.yaml").write_text(yaml.safe_dump(_lsf_config()))
    (configs / f"{TORQUE_SITE}.yaml").write_text(yaml.safe_dump(_torque_config()))
    site_settings = settings.model_copy(update={
        "site_configs_dir": configs, "secrets_dir": tmp_path / "secrets",
        "local_site_enabled": False})
    transport = ReplayTransport()
    runtime = build_runtime(site_settings)
    # The same sites again, reached through the replay: the SSH ones were never used.
    runtime.sites.close()
    runtime.sites = SiteRegistry.from_settings(
        site_settings, TransportPool(lambda target, breaker, jump: transport))
    runtime.sites.sync(runtime.sessions)
    try:
        with TestClient(create_app(runtime=runtime), client=LOOPBACK) as client:
            yield Sites(runtime, client, transport, Worker(runtime))
        transport.assert_done()
    finally:
        runtime.close()


def _post(sites: Sites, headers: dict[str, str], site: str, **spec: Any) -> str:
    # Two cores as one rank of two threads: a program with 2 ranks needs an MPI launcher.
    body = {"name": "hello", "site": site, "executable": "/bin/hostname",
            "resources": {"nodes": 1, "ranks": 1, "threads_per_rank": 2, "walltime": 600},
            **spec}
    r = sites.client.post("/api/v1/jobs", json=body, headers=headers)
    assert r.status_code == 202, r.text
    job_id: str = r.json()["id"]
    return job_id


def _job(sites: Sites, headers: dict[str, str], job_id: str) -> dict[str, Any]:
    r = sites.client.get(f"/api/v1/jobs/{job_id}", headers=headers)
    assert r.status_code == 200, r.text
    job: dict[str, Any] = r.json()
    return job


def _script_has(answer: Recording, *lines: str) -> Callable[[Call], Recording]:
    """`answer`, once the batch script the command read on stdin has these lines."""

    def check(call: Call) -> Recording:
        script = (call.stdin or b"").decode().splitlines()
        for line in lines:
            assert line in script, f"{line!r} not in the batch script:\n" + "\n".join(script)
        return answer

    return check


def _pbs_qsub(job_id: str) -> tuple[str, ...]:
    tag = f"gw-{job_id}"
    workdir = f"{SCRATCH}/{tag}"
    return ("sh", "-c", MKDIR_THEN[0], MKDIR_THEN[1], workdir, f"{workdir}/.gridgate",
            "/opt/pbs/bin/qsub", "-N", tag, "-o", f"{workdir}/stdout",
            "-e", f"{workdir}/stderr", "-j", "n", "-S", "/bin/sh", "-l", "walltime=0:10:00",
            "-l", "select=1:ncpus=2:mpiprocs=1:ompthreads=2", "-k", "oed", "-q", "batch")


def _qstat(native_id: str) -> tuple[str, ...]:
    return ("/opt/pbs/bin/qstat", "-f", "-F", "json", "-x", native_id)


def _grep_accounting(native_id: str) -> tuple[str, ...]:
    return ("grep", "-h", "-r", "-F", "-e", f";E;{native_id};", "-e", f";D;{native_id};",
            "--", PBS_ACCOUNTING)


def _with_script(answer: Recording, job_id: str) -> Callable[[Call], Recording]:
    return _script_has(answer, f"#PBS -N gw-{job_id}", "exec /bin/hostname")


def test_pbs_job_completes_from_qstat_history(sites: Sites, make_user: MakeUser) -> None:
    user = make_user()
    job_id = _post(sites, user.headers, PBS_SITE)
    t = sites.transport
    t.expect(_pbs_qsub(job_id), _with_script(load("pbs", "qsub_ok.txt"), job_id))
    # Finished, and still listed by `qstat -x` (job history): Exit_status 0.
    t.expect(_qstat("101.pbsserver"), load("pbs", "qstat_jobs.txt"))
    sites.worker.run_once()
    job = _job(sites, user.headers, job_id)
    assert (job["state"], job["exit_code"]) == ("COMPLETED", 0), job
    attempt = job["attempts"][0]
    assert (attempt["site"], attempt["native_id"], attempt["state"], attempt["raw_state"]) == (
        PBS_SITE, "101.pbsserver", "COMPLETED", "F (Exit_status 0)")
    # qstat prints server local time; the example site's scheduler.timezone is UTC.
    assert (attempt["started_at"], attempt["ended_at"]) == (
        "2025-11-22T02:15:02Z", "2025-11-22T02:15:10Z")



def test_a_job_never_seen_running_shows_when_it_started(sites: Sites,
                                                        make_user: MakeUser) -> None:
    """Issue 14: it ended between two status calls (QUEUED, then COMPLETED): the job's
    `started_at` is the site's start, as its attempt says, not empty."""
    user = make_user()
    job_id = _post(sites, user.headers, PBS_SITE)
    t = sites.transport
    t.expect(_pbs_qsub(job_id), _with_script(load("pbs", "qsub_ok.txt"), job_id))
    t.expect(_qstat("101.pbsserver"), load("pbs", "qstat_jobs.txt"))
    sites.worker.run_once()
    job = _job(sites, user.headers, job_id)
    states = [e["to_state"] for e in sites.client.get(
        f"/api/v1/jobs/{job_id}/events", headers=user.headers).json()["items"]]
    assert "RUNNING" not in states and job["state"] == "COMPLETED", states
    assert job["started_at"] == job["attempts"][0]["started_at"] == "2025-11-22T02:15:02Z"


def test_pbs_job_settled_by_the_accounting_log(sites: Sites, make_user: MakeUser) -> None:
    user = make_user()
    job_id = _post(sites, user.headers, PBS_SITE)
    t = sites.transport
    t.expect(_pbs_qsub(job_id), _with_script(load("pbs", "qsub_ok.txt"), job_id))
    # Gone from qstat (history expired): the server's accounting log has its E record.
    t.expect(_qstat("101.pbsserver"), load("pbs", "qstat_all_unknown.txt"))
    t.expect(_grep_accounting("101.pbsserver"), load("pbs", "accounting_records.txt"))
    sites.worker.run_once()
    job = _job(sites, user.headers, job_id)
    assert (job["state"], job["exit_code"]) == ("COMPLETED", 0), job



def test_pbs_cancel_through_the_api(sites: Sites, make_user: MakeUser) -> None:
    user = make_user()
    job_id = _post(sites, user.headers, PBS_SITE)
    t = sites.transport
    t.expect(_pbs_qsub(job_id), _with_script(load("pbs", "gw_qsub_111.txt"), job_id))
    t.expect(_qstat("111.pbsserver"), load("pbs", "gw_qstat_111_running.txt"))
    sites.worker.run_once()
    assert _job(sites, user.headers, job_id)["state"] == "RUNNING"

    r = sites.client.post(f"/api/v1/jobs/{job_id}/cancel", headers=user.headers)
    assert r.status_code == 202 and r.json()["cancel_requested"]
    # The cancel is remembered in the gateway's database (Job.cancel_requested), then
    # qdel; the job then leaves qstat and accounting says it was killed.
    t.expect(("/opt/pbs/bin/qdel", "111.pbsserver"), load("pbs", "qdel_ok.txt"))
    t.expect(_qstat("111.pbsserver"), load("pbs", "qstat_all_unknown.txt"))
    t.expect(_grep_accounting("111.pbsserver"), load("pbs", "accounting_records.txt"))
    sites.worker.run_once()
    job = _job(sites, user.headers, job_id)
    assert job["state"] == "CANCELLED", job
    attempt = job["attempts"][0]
    # Accounting: deleted (D record), then ended by SIGTERM (E record, Exit_status 256+15).
    assert (attempt["state"], attempt["raw_state"], attempt["exit_code"], attempt["reason"]) == (
        "CANCELLED", "E (Exit_status 271)", 143, "cancelled (killed by signal 15)")
    assert not any("/cancel-" in path for path in t.files)



def test_torque_job_completes_from_qstat_xml(sites: Sites, make_user: MakeUser) -> None:
    """TORQUE where it differs: nodes=N:ppn=P, no -k, `qstat -f -x` is XML, state C."""
    user = make_user()
    job_id = _post(sites, user.headers, TORQUE_SITE)
    tag = f"gw-{job_id}"
    workdir = f"{SCRATCH}/{tag}"
    t = sites.transport
    t.expect(("sh", "-c", MKDIR_THEN[0], MKDIR_THEN[1], workdir, f"{workdir}/.gridgate",
              "/opt/pbs/bin/qsub", "-N", tag, "-o", f"{workdir}/stdout",
              "-e", f"{workdir}/stderr", "-j", "n", "-S", "/bin/sh", "-l", "walltime=0:10:00",
              "-l", "nodes=1:ppn=2", "-q", "batch"),
             _script_has(load("pbs", "torque_qsub_ok.txt"), f"#PBS -N {tag}",
                         "#PBS -l nodes=1:ppn=2"))
    t.expect(("/opt/pbs/bin/qstat", "-f", "-x", "201.torquesrv"),
             load("pbs", "torque_qstat_jobs.txt"))
    sites.worker.run_once()
    job = _job(sites, user.headers, job_id)
    assert (job["state"], job["exit_code"]) == ("COMPLETED", 0), job
    attempt = job["attempts"][0]
    assert (attempt["native_id"], attempt["raw_state"], attempt["ended_at"]) == (
        "201.torquesrv", "C (exit_status 0)", "2025-11-22T02:15:10Z")


def _lsf_bsub(job_id: str) -> tuple[str, ...]:
    tag = f"gw-{job_id}"
    workdir = f"{SCRATCH}/{tag}"
    return ("sh", "-c", MKDIR_THEN[0], MKDIR_THEN[1], workdir, f"{workdir}/.gridgate",
            "/opt/lsf/bin/bsub", "-J", tag, "-cwd", workdir, "-o", f"{workdir}/stdout",
            "-e", f"{workdir}/stderr", "-W", "10", "-n", "2", "-q", "normal")


def _bjobs(native_id: str) -> tuple[str, ...]:
    return ("/opt/lsf/bin/bjobs", "-a", "-json", "-o", BJOBS_FIELDS, native_id)


def _lsf_script(answer: Recording, job_id: str) -> Callable[[Call], Recording]:
    return _script_has(answer, f"#BSUB -J gw-{job_id}", "exec /bin/hostname")


def test_lsf_job_runs_and_completes(sites: Sites, make_user: MakeUser) -> None:
    user = make_user()
    job_id = _post(sites, user.headers, LSF_SITE)
    t = sites.transport
    # bsub may say "Cannot connect to LSF. Please wait ..." before the job id.
    t.expect(_lsf_bsub(job_id), _lsf_script(load("lsf", "bsub_ok.txt"), job_id))
    t.expect(_bjobs("2001"), load("lsf", "bjobs_jobs.txt"))
    sites.worker.run_once()
    assert _job(sites, user.headers, job_id)["state"] == "RUNNING"
    # `bjobs -a` lists the finished job (for CLEAN_PERIOD): LSF has no accounting step.
    t.expect(_bjobs("2001"), load("lsf", "gw_bjobs_2001_done.txt"))
    sites.worker.run_once()
    job = _job(sites, user.headers, job_id)
    assert (job["state"], job["exit_code"]) == ("COMPLETED", 0), job
    attempt = job["attempts"][0]
    assert (attempt["native_id"], attempt["raw_state"]) == ("2001", "DONE")



def test_lsf_cancel_through_the_api(sites: Sites, make_user: MakeUser) -> None:
    user = make_user()
    job_id = _post(sites, user.headers, LSF_SITE)
    t = sites.transport
    t.expect(_lsf_bsub(job_id), _lsf_script(load("lsf", "bsub_ok.txt"), job_id))
    t.expect(_bjobs("2001"), load("lsf", "bjobs_jobs.txt"))
    sites.worker.run_once()
    r = sites.client.post(f"/api/v1/jobs/{job_id}/cancel", headers=user.headers)
    assert r.status_code == 202
    t.expect(("/opt/lsf/bin/bkill", "2001"), load("lsf", "bkill_ok.txt"))
    t.expect(_bjobs("2001"), load("lsf", "gw_bjobs_2001_killed.txt"))
    sites.worker.run_once()
    job = _job(sites, user.headers, job_id)
    assert job["state"] == "CANCELLED", job
    attempt = job["attempts"][0]
    assert (attempt["state"], attempt["raw_state"], attempt["exit_code"]) == (
        "CANCELLED", "EXIT", 130)
    assert attempt["reason"] == "TERM_OWNER: job killed by owner"


# --- `gridgate site check` on the same sites ---------------------------------------------

# `command -v` prints the path of what it found (POSIX sh, "command"); nothing, exit 1,
# when there is none.
FOUND_MPIRUN = Recording(0, b"/opt/mpich/bin/mpirun\n", b"", "POSIX sh: command -v")
SCRATCH_OK = Recording(0, b"", b"", "the probe script exits 0 for a writable directory")


def _check_pool(transport: ReplayTransport) -> TransportPool[ReplayTransport]:
    return TransportPool(lambda target, breaker, jump: transport)


def _expect_login_and_probes(t: ReplayTransport, queues: tuple[str, ...],
                             answer: Recording, launcher: str | None) -> None:
    t.expect(("true",))
    t.expect(queues, answer)
    if launcher is not None:
        t.expect(("sh", "-c", 'command -v -- "$1"', "sh", launcher), FOUND_MPIRUN)
    t.expect(("sh", "-c", 'test -d "$1" || exit 3; '
              'probe=$(mktemp -d "$1/.gridgate-check.XXXXXX" 2>/dev/null) || exit 4; '
              'rmdir "$probe"', "sh", SCRATCH), SCRATCH_OK)


def _check_settings(tmp_path: Path) -> Settings:
    """No database: a site check only reads the config and the secrets directory."""
    return Settings(data_dir=tmp_path / "data", secrets_dir=tmp_path / "secrets")


def test_site_check_reports_a_pbs_site(tmp_path: Path) -> None:
    config = with_updates(load_site_config(EXAMPLES / f"{PBS_SITE}.yaml"), {
        "partitions": [{"name": "workq", "default": True, "max_nodes": 4, "nodes": 4,
                        "max_walltime": "24:00:00", "cores_per_node": 2,
                        "memory_mb_per_node": 512}]})
    t = ReplayTransport()
    _expect_login_and_probes(t, ("/opt/pbs/bin/qstat", "-Q", "-f", "-F", "json"),
                             load("pbs", "qstat_queues.txt"), "mpirun")
    report = check_site(config, _check_settings(tmp_path), _check_pool(t))
    t.assert_done()
    assert [(c.name, c.status) for c in report.checks] == [
        ("ssh", Status.OK), ("scheduler", Status.OK), ("partition workq", Status.OK),
        ("launcher mpirun", Status.OK), ("scratch_root", Status.OK)], report.checks
    assert report.ok
    scheduler = report.checks[1].detail
    # Issue 13: a PBS site whose accounting logs the gateway reads also gives usage records.
    assert scheduler == ("pbs answers; partitions: workq, closedq; the adapter offers: "
                         "batch submit, queue snapshot, accounting, usage, whole queue, "
                         "queue start estimates, arrays")


def test_site_check_reports_what_an_lsf_site_lacks(tmp_path: Path) -> None:
    config = validate_site_config(_lsf_config())
    t = ReplayTransport()
    _expect_login_and_probes(t, ("/opt/lsf/bin/bqueues", "-json", "-o",
                                 "queue_name status max njobs pend run"),
                             load("lsf", "bqueues.txt"), None)
    report = check_site(config, _check_settings(tmp_path), _check_pool(t))
    t.assert_done()
    assert report.ok, report.checks
    # No accounting source and no dry-run start estimate: the report says what there is.
    assert report.checks[1].detail == ("lsf answers; partitions: normal, night; the "
                                       "adapter offers: batch submit, queue snapshot, "
                                       "whole queue, queue start estimates, arrays")


class _NoQueues(PbsDialect):
    """A scheduler that cannot list its queues (none registered today is one)."""

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities()


def test_site_check_skips_what_the_adapter_cannot_do() -> None:
    config = load_site_config(EXAMPLES / f"{PBS_SITE}.yaml")
    t = ReplayTransport()  # nothing may be run: the adapter says it cannot list queues
    checks = scheduler_checks(config, BatchAdapter(t, _NoQueues()))
    assert [(c.name, c.status, c.detail) for c in checks] == [
        ("scheduler", Status.SKIP,
         "the pbs adapter cannot list queues (it offers: batch submit)"),
        ("partition batch", Status.SKIP, "not checked: the pbs adapter cannot list queues")]
    assert t.calls == []
