"""Counting jobs at a testbed site's scheduler, independently of the gateway's adapters:
the proof of "submitted exactly once" is what the scheduler holds or remembers."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import defaultdict

from testbed.state import SiteInfo
from tests.testbed.fixture import ssh

SLURM_SITES = ("roadrunner", "parnass2")
COMMUNITY = "gwcomm"


def scheduler_jobs(site: SiteInfo, tag: str) -> set[str]:
    """Ids of every job the site's scheduler holds or remembers under the name `tag`."""
    if site.name in SLURM_SITES:
        queued = ssh(site, COMMUNITY, ["squeue", "--noheader", "--states=all",
                                       f"--name={tag}", "--format=%i"]).stdout.split()
        ended = ssh(site, COMMUNITY, ["sacct", "--noheader", "--parsable2", "--allocations",
                                      "--allusers", f"--name={tag}", "--starttime=now-2days",
                                      "--format=JobID"]).stdout.split()
        return set(queued) | set(ended)
    found = _sge_queued(site).get(tag, set())
    # qacct -j takes a job name too; it exits 1 when it has no record of one.
    accounted = ssh(site, COMMUNITY, ["qacct", "-j", tag], check=False).stdout
    for line in accounted.splitlines():
        key, _, value = line.partition(" ")
        if key == "jobnumber":
            found.add(value.strip())
    return found


def jobs_by_name(site: SiteInfo) -> dict[str, set[str]]:
    """Every job the site's scheduler holds or remembers (two days back), by name: ids."""
    found: defaultdict[str, set[str]] = defaultdict(set)
    if site.name in SLURM_SITES:
        queued = ssh(site, COMMUNITY, ["squeue", "--noheader", "--states=all", "--all",
                                       "--format=%j|%i"]).stdout
        ended = ssh(site, COMMUNITY, ["sacct", "--noheader", "--parsable2", "--allocations",
                                      "--allusers", "--starttime=now-2days",
                                      "--format=JobName,JobID"]).stdout
        for line in (queued + ended).splitlines():
            name, _, job_id = line.rpartition("|")
            if name:
                found[name].add(job_id.strip())
        return found
    for name, ids in _sge_queued(site).items():
        found[name] |= ids
    # Every finished job's record, in blocks of "key value" lines.
    accounted = ssh(site, COMMUNITY, ["qacct", "-j"], check=False).stdout
    name = ""
    for line in accounted.splitlines():
        key, _, value = line.partition(" ")
        if key == "jobname":
            name = value.strip()
        elif key == "jobnumber":
            found[name].add(value.strip())
    return found


def _sge_queued(site: SiteInfo) -> dict[str, set[str]]:
    listing = ssh(site, COMMUNITY, ["qstat", "-xml", "-u", "*"]).stdout
    found: defaultdict[str, set[str]] = defaultdict(set)
    for job in ET.fromstring(listing).iter("job_list"):
        found[(job.findtext("JB_name") or "").strip()].add(
            (job.findtext("JB_job_number") or "").strip())
    return found
