"""Where the IBM Spectrum LSF client commands are on a site."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LsfCommands:
    bsub: str = "bsub"
    bjobs: str = "bjobs"
    bkill: str = "bkill"
    bqueues: str = "bqueues"
    # Lists the hosts and their job slots (queue snapshots).
    bhosts: str = "bhosts"
    # Searches the job log lsb.acct (when the site lets the gateway read it).
    grep: str = "grep"
