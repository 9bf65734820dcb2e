"""Following 500 jobs spread over a federation of 40 distant sites (issue 32, item 2):
one status cycle against the slowest site's round trip (prints JSON; not a test; root,
brings up a testbed of its own and takes it down).

The federation: 40 login hosts in front of the testbed's Slurm site (testbed.login_hosts:
each its own sshd, host key and link, round trips spread evenly from 10 to 200 ms), each
a site of its own to the gateway (its own site config, connection and lanes). 500 jobs
(`sleep 600`, all but two pending on the one 2-core node) are submitted through the API
by the worker, round robin over the sites; then the worker stops and status cycles are
timed as the worker's loop runs them: every site's follow lane kicked at once
(gateway.worker.lanes), the cycle over when the last site's status is written.

Measured in the same run:
- the slowest site's single round trip: a command on its pooled connection (`true`), and
  its link's round trip;
- the cycle as it was before lanes: each site's status after the other (one cycle);
- the machine's own floor: the same cycle with every link at 0 ms (40 `squeue` at once on
  this 2-core machine, behind one slurmctld: a real federation runs them on 40 machines);
- what 40 machines of their own would give (the oracle): the slowest of every site's
  link round trip plus its status time alone (links at 0 ms, one site at a time);
- a dead site: one link swallows everything (a site that hangs, not one that refuses);
  the other 39 sites' cycle with it, against their cycle without it.

    sudo .venv/bin/python benchmarks/federation_status.py [--sites 40] [--jobs 500]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fastapi.testclient import TestClient  # noqa: E402
from sqlalchemy import func, select  # noqa: E402

from adapters.ssh import SshTarget, SshTransport  # noqa: E402
from gateway.api.app import create_app  # noqa: E402
from gateway.auth.accounts import create_local_user  # noqa: E402
from gateway.auth.tokens import issue_access_token  # noqa: E402
from gateway.db.engine import transaction  # noqa: E402
from gateway.db.models import Attempt  # noqa: E402
from gateway.runtime import Runtime, build_runtime  # noqa: E402
from gateway.services.sites.entry import SiteEntry  # noqa: E402
from gateway.settings import Settings  # noqa: E402
from gateway.worker.context import StepContext  # noqa: E402
from gateway.worker.lanes import FOLLOW, SiteLanes  # noqa: E402
from gateway.worker.loop import Worker  # noqa: E402
from gateway.worker.poll import poll  # noqa: E402
from testbed import login_hosts, wan  # noqa: E402
from testbed.config import TestbedConfig  # noqa: E402
from testbed.login_hosts import LoginHost  # noqa: E402
from testbed.state import SiteInfo  # noqa: E402
from tests.conftest import ALL_SCOPES  # noqa: E402
from tests.pg import start_postgres  # noqa: E402
from tests.testbed.fixture import running_testbed, unique_config  # noqa: E402

SITE = "roadrunner"
ACCOUNT = "gwcomm"
TARGET_CYCLE_OVER_SLOWEST_MAX = 1.5


def wait_until(what: str, done: Callable[[], bool], timeout: float) -> None:
    end = time.monotonic() + timeout
    while not done():
        if time.monotonic() > end:
            raise RuntimeError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.2)


def site_configs(site: SiteInfo, hosts: Sequence[LoginHost], into: Path) -> None:
    """One site config per login host: the site's own, with the host's name, address
    and host key."""
    into.mkdir()
    for host in hosts:
        name = f"fed{host.name[-2:]}"
        config = login_hosts.site_config(site, host, name)
        (into / f"{name}.yaml").write_text(yaml.safe_dump(config))


class Federation:
    """The gateway in front of the 40 sites: runtime, API (in process), one user."""

    def __init__(self, base: Path, configs: Path, database_url: str) -> None:
        self.settings = Settings(data_dir=base / "data", database_url=database_url,
                                 site_configs_dir=configs, local_site_enabled=False,
                                 run_worker=False, worker_poll_seconds=0.2,
                                 public_url="http://gateway.test")
        self.runtime: Runtime = build_runtime(self.settings)
        with transaction(self.runtime.sessions) as session:
            user_id = create_local_user(session, "bench", "correct horse battery").id
        token = issue_access_token(self.settings, self.runtime.keys, subject=user_id,
                                   client_id="bench", scope=ALL_SCOPES, username="bench").token
        self.headers = {"Authorization": f"Bearer {token}"}
        self.api = TestClient(create_app(runtime=self.runtime))
        self.sites: list[SiteEntry] = list(self.runtime.sites)
        self.ctx = StepContext.of(self.runtime, "bench")

    def submit(self, jobs: int) -> float:
        """Post `jobs` round robin over the sites, run the worker until every one has its
        site's id; seconds taken."""
        t0 = time.perf_counter()
        ids = []
        for n in range(jobs):
            r = self.api.post("/api/v1/jobs", headers=self.headers, json={
                "name": f"fed {n}", "site": self.sites[n % len(self.sites)].name,
                "executable": "/bin/sleep", "args": ["600"], "resources": {"walltime": 700}})
            if r.status_code != 202:
                raise RuntimeError(f"POST /api/v1/jobs -> {r.status_code}: {r.text}")
            ids.append(r.json()["id"])
        stop = threading.Event()
        worker = threading.Thread(target=Worker(self.runtime, "bench-worker").run,
                                  args=(stop,), daemon=True)
        worker.start()
        try:
            wait_until("every job to have its site's id", lambda: self.submitted(ids) == jobs,
                       1800)
        finally:
            stop.set()
            worker.join(timeout=300)
        return time.perf_counter() - t0

    def submitted(self, job_ids: Sequence[str]) -> int:
        with self.runtime.sessions() as session:
            return session.scalar(select(func.count()).select_from(Attempt).where(
                Attempt.job_id.in_(job_ids), Attempt.native_id.is_not(None))) or 0

    def close(self) -> None:
        self.api.close()
        self.runtime.close()


class Cycles:
    """Every site's follow lane; a cycle kicks them all and ends when the sites waited
    for have written their statuses."""

    def __init__(self, federation: Federation) -> None:
        self.fed = federation
        self._done = threading.Condition()
        self._ended: dict[str, float] = {}
        self.lanes = SiteLanes(federation.sites, self._pass, lambda _: None)

    def _pass(self, site: SiteEntry, lane: str) -> bool:
        if lane == FOLLOW:
            poll(self.fed.ctx, site)
            with self._done:
                self._ended[site.name] = time.perf_counter()
                self._done.notify_all()
        return False

    def run(self, waited: set[str], timeout: float = 300) -> dict[str, Any]:
        with self._done:
            self._ended = {}
        cpu0 = _cpu()
        t0 = time.perf_counter()
        self.lanes.kick_all(FOLLOW)
        with self._done:
            if not self._done.wait_for(lambda: waited <= self._ended.keys(), timeout):
                raise RuntimeError(f"no status from {sorted(waited - self._ended.keys())}")
            ended = {name: self._ended[name] - t0 for name in waited}
        return {"cycle_s": max(ended.values()), "per_site_s": ended, "cpu_s": _cpu() - cpu0}

    def ended(self, name: str) -> bool:
        """Whether the site's status was written in the last cycle."""
        with self._done:
            return name in self._ended

    def close(self) -> None:
        self.lanes.stop(timeout=120)


def sequential_cycle(fed: Federation) -> tuple[float, dict[str, float]]:
    """The cycle as the worker ran it before lanes: each site after the other; and each
    site's status time (alone on the machine)."""
    each: dict[str, float] = {}
    t0 = time.perf_counter()
    for site in fed.sites:
        started = time.perf_counter()
        poll(fed.ctx, site)
        each[site.name] = time.perf_counter() - started
    return time.perf_counter() - t0, each


def pooled_round_trip(site: SiteInfo, host: LoginHost, runs: int = 9) -> float:
    """A command's time on a pooled connection to `host` (median)."""
    transport = SshTransport(SshTarget(host=host.host, port=host.port, user=ACCOUNT,
                                       host_keys=(host.host_key,), key_path=site.key(ACCOUNT),
                                       site=f"{host.name}-bench"))
    try:
        transport.run(["true"])
        times = []
        for _ in range(runs):
            wait_until("a session opened ahead", lambda: transport.sessions.ready > 0, 30)
            t0 = time.perf_counter()
            transport.run(["true"])
            times.append(time.perf_counter() - t0)
    finally:
        transport.close()
    return statistics.median(times)


def _cpu() -> float:
    """CPU seconds of this process (the gateway side: every thread) so far."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def medians(samples: Sequence[dict[str, Any]]) -> dict[str, Any]:
    cycles = [s["cycle_s"] for s in samples]
    return {"n": len(cycles), "median_ms": round(1000 * statistics.median(cycles), 1),
            "min_ms": round(1000 * min(cycles), 1), "max_ms": round(1000 * max(cycles), 1),
            "gateway_cpu_ms_median": round(1000 * statistics.median(s["cpu_s"]
                                                                    for s in samples), 1)}


def measure(info_site: SiteInfo, config: TestbedConfig, hosts: list[LoginHost],
            fed: Federation, cycles: int) -> dict[str, Any]:
    names = {site.name for site in fed.sites}
    by_site = {f"fed{h.name[-2:]}": h for h in hosts}
    slowest = max(hosts, key=lambda h: h.rtt_ms)
    out: dict[str, Any] = {"sites": len(hosts), "rtt_ms": {"min": min(h.rtt_ms for h in hosts),
                                                           "max": slowest.rtt_ms}}
    lanes = Cycles(fed)
    try:
        lanes.run(names)  # connects to every site; not counted
        samples = [lanes.run(names) for _ in range(cycles)]
        round_trip = pooled_round_trip(info_site, slowest)
        cycle = medians(samples)
        out["cycle"] = cycle
        out["slowest_site"] = {"link_rtt_ms": slowest.rtt_ms,
                               "pooled_command_ms": round(1000 * round_trip, 1)}
        last = samples[-1]["per_site_s"]
        out["slowest_sites_in_last_cycle"] = {
            name: {"rtt_ms": by_site[name].rtt_ms, "status_ms": round(1000 * t, 1)}
            for name, t in sorted(last.items(), key=lambda kv: -kv[1])[:5]}
        ratio = cycle["median_ms"] / out["slowest_site"]["pooled_command_ms"]
        out["ratio_cycle_over_slowest_round_trip"] = round(ratio, 3)
        out["ratio_cycle_over_slowest_link_rtt"] = round(cycle["median_ms"] / slowest.rtt_ms, 3)
        out["target_ratio_max"] = TARGET_CYCLE_OVER_SLOWEST_MAX
        out["met"] = ratio <= TARGET_CYCLE_OVER_SLOWEST_MAX

        out["before_lanes_one_site_after_another_ms"] = round(1000 * sequential_cycle(fed)[0],
                                                              1)

        for host in hosts:
            wan.set_delay(config, host.link, 0)
        out["machine_floor_all_links_0_ms"] = medians([lanes.run(names)
                                                       for _ in range(cycles)])
        # Each site's status alone (links at 0 ms, one site at a time): what one site's
        # own login host and controller would take, were it not sharing this machine.
        alone = [sequential_cycle(fed)[1] for _ in range(3)]
        own = {name: min(run[name] for run in alone) for name in names}
        for host in hosts:
            wan.set_delay(config, host.link, host.rtt_ms)
        # The cycle 40 machines of their own would give: every site's round trip (its
        # link's) plus its status alone, the slowest of them.
        oracle = max(by_site[name].rtt_ms / 1000 + own[name] for name in names)
        out["status_alone_ms"] = {"median": round(1000 * statistics.median(own.values()), 1),
                                  "max": round(1000 * max(own.values()), 1)}
        out["oracle_cycle_ms"] = round(1000 * oracle, 1)
        out["oracle_over_slowest_round_trip"] = round(
            1000 * oracle / out["slowest_site"]["pooled_command_ms"], 3)
        out["cycle_over_oracle"] = round(cycle["median_ms"] / (1000 * oracle), 3)

        dead = hosts[len(hosts) // 2]
        dead_site = f"fed{dead.name[-2:]}"
        others = names - {dead_site}
        without = medians([lanes.run(others) for _ in range(cycles)])
        wan.black_hole(config, dead.link)
        try:
            with_dead = medians([lanes.run(others) for _ in range(cycles)])
            entry = next(s for s in fed.sites if s.name == dead_site)
            still_waiting = not lanes.ended(dead_site)
        finally:
            # End the hung status call now (its connection dropped) rather than at its
            # deadline, then let the link pass again.
            entry.adapter.transport.disconnect()  # type: ignore[attr-defined]
            wan.black_hole(config, dead.link, on=False)
        out["dead_site"] = {
            "site": dead_site, "link_rtt_ms": dead.rtt_ms,
            "how": "its link swallows everything (Toxiproxy timeout toxic, 0 = forever)",
            "dead_sites_status_still_waiting": still_waiting,
            "others_cycle_without_it": without, "others_cycle_with_it_dead": with_dead,
            "added_ms": round(with_dead["median_ms"] - without["median_ms"], 1)}
    finally:
        lanes.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sites", type=int, default=40)
    parser.add_argument("--jobs", type=int, default=500)
    parser.add_argument("--cycles", type=int, default=7)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="gw-bench-fed-"))
    result: dict[str, Any] = {"benchmark": "federation_status", "cpus": os.cpu_count(),
                              "jobs": args.jobs, "scheduler": "slurm 22.05 (testbed, one "
                              "controller behind every login host)"}
    pg = start_postgres(base / "pg")
    try:
        with running_testbed(unique_config()) as info:
            config = TestbedConfig.from_env(prefix=info.prefix, subnet=info.subnet)
            site = info.sites[SITE]
            rtts = login_hosts.spread(args.sites, 10, 200)
            hosts = login_hosts.start(config, site, rtts, prefix="fed")
            try:
                site_configs(site, hosts, base / "site-configs")
                fed = Federation(base, base / "site-configs", pg.create_database("fed"))
                try:
                    result["submit_s"] = round(fed.submit(args.jobs), 1)
                    result["loadavg_1m_start"] = os.getloadavg()[0]
                    result.update(measure(site, config, hosts, fed, args.cycles))
                    result["loadavg_1m_end"] = os.getloadavg()[0]
                finally:
                    fed.close()
            finally:
                login_hosts.stop(config, site, hosts)
    finally:
        pg.stop()
        shutil.rmtree(base, ignore_errors=True)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
