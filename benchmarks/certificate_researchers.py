"""Researchers as themselves at a site: certificate mode against community mode (prints JSON).

Brings up its own testbed (needs root) and serves one real Slurm site (roadrunner) under
two names in one gateway: `roadrunner` as its config says (community: every job runs as
`gwcomm`) and `roadrunner-certs`, the same sshd and slurmctld in certificate mode, where
researcher rNNN logs in as their own account gwrNNN with certificates the gateway's CA
signs (the site trusts the CA for as long as this runs), and its status account (the
testbed's gwcomm; `--no-status-account`: none) follows everyone's jobs. The gateway runs
as deployed:
the API in a process of its own (`gridgate serve`, worker off) over PostgreSQL, and one
Worker thread here, polling every 0.05 s. Jobs are `sleep 600` on a 2-core node, so all
but two pend; every phase ends with all jobs cancelled (as root at the site).

1. latency, interleaved: `POST /api/v1/jobs` until the job shows in `squeue`, by one
   community user, and by 50 researchers in turn at the certificate site (two rounds:
   the first logs each researcher in, the second finds their connection open); and what
   a first contact adds: a new certificate connection running `true`, against OpenSSH's
   client logging in with a key and running `true`.
2. a burst of 200 submissions POSTed by 8 clients at once, until all have native ids:
   by one community user, then by the 50 researchers (4 each; each has logged in); and
   again with all 200 accepted before the worker starts (the fewest site commands); and
   the site's own floor: 200 raw `sbatch` in the same shape of commands, no gateway.
3. 500 researchers at once, each submitting one job: the SSH connections from the
   gateway to the site's sshd, sampled every 0.1 s (`ss` inside the site), against the
   bound (GRIDGATE_SSH_IDLE_CONNECTIONS_PER_SITE idle, plus those carrying a command),
   and one status cycle over the 500 accounts with how many connections it opened.

Targets (issue 33): latency and burst throughput in certificate mode within 1.2x of
community mode; connections per site bounded.

    sudo .venv/bin/python benchmarks/certificate_researchers.py
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from adapters.transport import Transport  # noqa: E402
from benchmarks.site_submission import (  # noqa: E402
    POLL_SECONDS,
    WorkerThread,
    checked,
    gateway_settings,
    live_attempts,
    post_sleep,
    raw_sbatch_argv,
    site_transport,
    summary,
    wait_until,
    with_native_id,
)
from gateway.auth.accounts import create_local_user  # noqa: E402
from gateway.auth.ssh_ca import SshCa  # noqa: E402
from gateway.auth.tokens import issue_access_token  # noqa: E402
from gateway.db.engine import transaction  # noqa: E402
from gateway.runtime import Runtime, build_runtime  # noqa: E402
from gateway.worker.loop import Worker  # noqa: E402
from gateway.worker.poll import poll  # noqa: E402
from testbed import trusted_ca  # noqa: E402
from testbed.holder import nsexec  # noqa: E402
from testbed.sites import COMMUNITY, RESEARCHERS  # noqa: E402
from testbed.state import TestbedInfo  # noqa: E402
from tests.conftest import ALL_SCOPES  # noqa: E402
from tests.pg import start_postgres  # noqa: E402
from tests.testbed.fixture import running_testbed, ssh_argv, unique_config  # noqa: E402
from tests.worker.gateway_process import GatewayProcess, free_port  # noqa: E402

SITE = "roadrunner"
CERTS = "roadrunner-certs"
BURST_CLIENTS = 8
TARGET_RATIO_MAX = 1.2  # certificate mode / community mode (latency; burst time)


class Gateway:
    """The API process and a worker thread here, over one database, serving SITE and CERTS
    (the latter trusting this gateway's CA); `users` researchers r001... with tokens."""

    def __init__(self, base: Path, info: TestbedInfo, database_url: str, users: int,
                 status_account: bool) -> None:
        configs = base / "site-configs"
        configs.mkdir()
        template = yaml.safe_load(Path(info.site_configs, f"{SITE}.yaml").read_text())
        (configs / f"{SITE}.yaml").write_text(yaml.safe_dump(template))
        self.researchers = [(f"r{a.name[3:]}", a.name) for a in RESEARCHERS[:users]]
        limits: dict[str, Any] = {"source_addresses": [f"{info.bridge_ip}/32"]}
        if status_account:
            limits["status_account"] = COMMUNITY.name
        certs = {**template, "name": CERTS, "accounts": {
            "mode": "certificate", "principals": dict(self.researchers),
            "certificate": limits}}
        (configs / f"{CERTS}.yaml").write_text(yaml.safe_dump(certs))
        env, self.settings = gateway_settings(base, configs, database_url)
        self.runtime: Runtime = build_runtime(self.settings)  # migrates, makes the keys
        lines = [k.line for k in SshCa(self.settings.ssh_ca_dir).trusted(self.runtime.clock())]
        self.site = info.sites[SITE]
        trusted_ca.trust(self.site, lines)
        self.server = GatewayProcess({**env, "GRIDGATE_PORT": str(free_port())},
                                     base / "server.log")
        self.server.start()
        self.client = httpx.Client(base_url=self.server.url, timeout=120)
        self.headers = {name: self._token(name) for name in
                        ["community", *(user for user, _ in self.researchers)]}
        self.worker = Worker(self.runtime)
        self.worker_thread = WorkerThread(self.worker)
        self.worker_thread.start()

    def _token(self, name: str) -> dict[str, str]:
        with transaction(self.runtime.sessions) as session:
            user_id = create_local_user(session, name, "correct horse battery").id
        token = issue_access_token(self.settings, self.runtime.keys, subject=user_id,
                                   client_id="bench", scope=ALL_SCOPES, username=name).token
        return {"Authorization": f"Bearer {token}"}

    def post(self, user: str, site: str, name: str) -> str:
        return post_sleep(self.client, self.headers[user], site, name)

    def with_native_id(self, job_ids: Sequence[str]) -> int:
        return with_native_id(self.runtime, job_ids)

    def live_attempts(self) -> int:
        return live_attempts(self.runtime)

    def connections(self) -> int:
        """The gateway's established SSH connections to the site, as its kernel sees them."""
        out = nsexec(self.site.holder_pid, ["ss", "-Htn", "state", "established",
                                            "( sport = :22 )"]).stdout
        return sum(1 for line in out.splitlines() if line.strip())

    def cancel_all(self) -> None:
        """Every job at the site cancelled (as root there); the gateway sees them end."""
        nsexec(self.site.holder_pid, ["sh", "-c", "squeue -h -o %i | xargs -r scancel"])
        wait_until("the gateway to see its jobs end", lambda: self.live_attempts() == 0,
                   600, 0.2)

    def close(self) -> None:
        self.worker_thread.stop()
        self.client.close()
        self.server.stop()
        self.runtime.close()
        trusted_ca.trust(self.site, [])


def _visible(poller: Transport, job_id: str) -> bool:
    return bool(checked(poller, ["squeue", "-h", f"--name=gw-{job_id}", "-o", "%i"]).strip())


def _until_visible(gateway: Gateway, poller: Transport, user: str, site: str) -> float:
    t0 = time.perf_counter()
    job_id = gateway.post(user, site, "latency")
    while not _visible(poller, job_id):
        pass
    return time.perf_counter() - t0


def latency(gateway: Gateway, poller: Transport, rounds: int) -> dict[str, Any]:
    """Each round: every researcher once, each beside one community submission."""
    community: list[float] = []
    by_round: list[list[float]] = []
    for _ in range(rounds):
        certs: list[float] = []
        for user, _account in gateway.researchers:
            community.append(_until_visible(gateway, poller, "community", SITE))
            certs.append(_until_visible(gateway, poller, user, CERTS))
            # Keep the queue short: each run leaves nothing pending behind.
            nsexec(gateway.site.holder_pid, ["scancel", "--state=PENDING"])
        by_round.append(certs)
    every = [s for r in by_round for s in r]
    base = statistics.median(community)
    ratio = statistics.median(every) / base
    first = statistics.median(by_round[0]) / base
    later = statistics.median([s for r in by_round[1:] for s in r]) / base
    return {
        "researchers": len(gateway.researchers),
        "community_post_to_squeue": summary(community),
        "certificate_post_to_squeue": summary(every),
        "certificate_first_round_login": summary(by_round[0]),
        "certificate_later_rounds": summary([s for r in by_round[1:] for s in r]),
        "ratio_certificate_over_community_median": round(ratio, 4),
        "ratio_first_round_login": round(first, 4),
        "ratio_later_rounds": round(later, 4),
        "target_ratio_max": TARGET_RATIO_MAX,
        "met": ratio <= TARGET_RATIO_MAX,
        "met_later_rounds": later <= TARGET_RATIO_MAX,
    }


def _burst(gateway: Gateway, posts: Sequence[tuple[str, str]], held: bool = False) -> float:
    """Seconds from the first POST until every job has its native id; `held`: from the
    worker's start, every job accepted before it (the fewest commands: one per account
    and batch)."""
    if held:
        gateway.worker_thread.stop()
    t0 = time.perf_counter()
    with ThreadPoolExecutor(BURST_CLIENTS) as clients:
        ids = list(clients.map(lambda p: gateway.post(p[0], p[1], "burst"), posts))
    if held:
        t0 = time.perf_counter()
        gateway.worker_thread.start()
    wait_until("all burst jobs to have native ids",
               lambda: gateway.with_native_id(ids) == len(ids), 900)
    return time.perf_counter() - t0


def burst(gateway: Gateway, count: int, repeats: int) -> dict[str, Any]:
    """Each kind of burst `repeats` times, the modes alternating; medians compared."""
    users = [user for user, _ in gateway.researchers]
    posts = {"community": [("community", SITE)] * count,
             "certificate": [(users[i % len(users)], CERTS) for i in range(count)]}
    runs: dict[tuple[str, bool], list[float]] = {}
    for held in (False, True):
        for _ in range(repeats):
            for mode, mode_posts in posts.items():
                runs.setdefault((mode, held), []).append(_burst(gateway, mode_posts, held))
                gateway.cancel_all()
    seconds = {key: statistics.median(values) for key, values in runs.items()}
    ratio = seconds["certificate", False] / seconds["community", False]
    return {
        "jobs": count, "posting_clients": BURST_CLIENTS, "researchers": len(users),
        "repeats": repeats,
        **{mode: {"all_native_ids_s_median": round(seconds[mode, False], 3),
                  "runs_s": [round(v, 3) for v in runs[mode, False]],
                  "jobs_per_s": round(count / seconds[mode, False], 2)} for mode in posts},
        "ratio_certificate_over_community_time": round(ratio, 4),
        # The floor of the submission work: every job accepted before the worker looks,
        # so it needs the fewest commands (community: batches of 10; certificate: one
        # batch per researcher).
        "all_accepted_first": {
            **{mode: {"all_native_ids_s_median": round(seconds[mode, True], 3),
                      "runs_s": [round(v, 3) for v in runs[mode, True]]} for mode in posts},
            "ratio_certificate_over_community_time": round(
                seconds["certificate", True] / seconds["community", True], 4)},
        "target_ratio_max": TARGET_RATIO_MAX,
        "met": ratio <= TARGET_RATIO_MAX,
    }


def logins(gateway: Gateway, runs: int) -> dict[str, Any]:
    """What a researcher's first contact adds: a new connection (a key pair, a
    certificate, the handshake, sshd's login) and `true`, as the gateway does it, against
    OpenSSH's client logging in with a key and running `true` (a fresh process each)."""
    entry = gateway.runtime.sites.get(CERTS)
    ours: list[float] = []
    raw: list[float] = []
    argv = ssh_argv(gateway.site, COMMUNITY.name, ["true"])
    for user, _ in gateway.researchers[:runs]:
        adapter: Any = entry.adapter_for(user)
        adapter.transport.disconnect()
        t0 = time.perf_counter()
        checked(adapter.transport, ["true"])
        ours.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True, stdin=subprocess.DEVNULL)
        raw.append(time.perf_counter() - t0)
    return {"gateway_new_certificate_connection_and_true": summary(ours),
            "openssh_key_login_and_true": summary(raw)}


def site_floor(gateway: Gateway, poller: Transport, count: int) -> dict[str, Any]:
    """The site's own cost of the burst, without the gateway: `count` raw `sbatch` in the
    same shape of commands, 4 at once (the gateway's submission threads): batches of 10
    as the community account, and one batch per researcher over their (open) certificate
    connections. The oracle for the burst's ratio: what any gateway would pay."""
    entry = gateway.runtime.sites.get(CERTS)
    users = [user for user, _ in gateway.researchers]
    per_user = -(-count // len(users))

    def batch(transport: Transport, size: int) -> None:
        script = " && ".join(shlex.join(raw_sbatch_argv("floor")) for _ in range(size))
        checked(transport, ["sh", "-c", script], timeout=300)

    def timed(units: list[tuple[Transport, int]]) -> float:
        t0 = time.perf_counter()
        with ThreadPoolExecutor(4) as threads:
            list(threads.map(lambda unit: batch(*unit), units))
        return time.perf_counter() - t0

    community = timed([(poller, 10)] * (count // 10))
    gateway.cancel_all()
    mapped: Any = entry.mapped
    certificate = timed([(mapped[user].transport, per_user) for user in users])
    gateway.cancel_all()
    return {"community_batches_of_10_s": round(community, 3),
            f"certificate_one_batch_of_{per_user}_per_researcher_s": round(certificate, 3),
            "ratio_certificate_over_community_time": round(certificate / community, 4)}


def many_researchers(gateway: Gateway) -> dict[str, Any]:
    """Every researcher submits one job at once; connections sampled meanwhile."""
    samples: list[int] = []
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            samples.append(gateway.connections())
            time.sleep(0.1)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        users = [user for user, _ in gateway.researchers]
        seconds = _burst(gateway, [(user, CERTS) for user in users])
        # One cycle of our own, the worker stopped (its lanes would poll meanwhile).
        gateway.worker_thread.stop()
        entry = gateway.runtime.sites.get(CERTS)
        before = _connects(gateway)
        t0 = time.perf_counter()
        poll(gateway.worker.ctx, entry)
        cycle = time.perf_counter() - t0
        opened = _connects(gateway) - before
        gateway.worker_thread.start()
    finally:
        done.set()
        sampler.join()
    gateway.cancel_all()
    settings = gateway.settings
    cap = settings.ssh_idle_connections_per_site
    # Threads that may carry a command to one site at once: the send lane's submission
    # threads, the follow lane's status threads, and one staging or cancel step.
    busy = 2 * settings.worker_submit_threads + 1
    return {
        "researchers": len(users), "all_submitted_s": round(seconds, 3),
        "connections_sampled": len(samples),
        "connections_peak": max(samples), "connections_median": statistics.median(samples),
        "bound": {"idle_per_site": cap, "carrying_a_command_max": busy, "total": cap + busy},
        "status_cycle_over_every_account": {"seconds": round(cycle, 3),
                                            "connections_opened": opened},
        "met": max(samples) <= cap + busy,
    }


def _connects(gateway: Gateway) -> int:
    """SSH connections the certificate site's accounts have opened so far."""
    entry = gateway.runtime.sites.get(CERTS)
    assert entry.mapped is not None
    adapters: list[Any] = list(entry.mapped.values())
    return sum(adapter.transport.connects for adapter in adapters)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--researchers", type=int, default=50)
    parser.add_argument("--latency-rounds", type=int, default=2)
    parser.add_argument("--burst", type=int, default=200)
    parser.add_argument("--burst-repeats", type=int, default=3)
    parser.add_argument("--many", type=int, default=len(RESEARCHERS))
    parser.add_argument("--no-status-account", action="store_true",
                        help="each researcher's own account follows their jobs")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="gw-bench-certs-"))
    result: dict[str, Any] = {"benchmark": "certificate_researchers", "site": SITE,
                              "status_account": None if args.no_status_account
                              else COMMUNITY.name,
                              "scheduler": "slurm 22.05 (testbed, 1 node, 2 cores)",
                              "cpu_count": os.cpu_count(),
                              "worker_poll_seconds": POLL_SECONDS}
    pg = start_postgres(base / "pg")
    try:
        with running_testbed(unique_config()) as info:
            gateway = Gateway(base, info, pg.create_database("bench"),
                              max(args.researchers, args.many), not args.no_status_account)
            poller = site_transport(info.sites[SITE])
            try:
                checked(poller, ["true"])
                result["loadavg_1m_start"] = os.getloadavg()[0]
                everyone = gateway.researchers
                gateway.researchers = everyone[:args.researchers]
                result["latency"] = latency(gateway, poller, args.latency_rounds)
                result["first_contact"] = logins(gateway, 20)
                gateway.cancel_all()
                result["burst"] = burst(gateway, args.burst, args.burst_repeats)
                result["burst"]["site_floor_raw_sbatch"] = site_floor(gateway, poller,
                                                                      args.burst)
                gateway.researchers = everyone[:args.many]
                result["many_researchers"] = many_researchers(gateway)
                result["loadavg_1m_end"] = os.getloadavg()[0]
                result["met"] = {k: result[k]["met"]
                                 for k in ("latency", "burst", "many_researchers")}
            finally:
                poller.close()
                gateway.close()
    finally:
        pg.stop()
        shutil.rmtree(base, ignore_errors=True)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
