"""Where the PBS Professional / OpenPBS client commands are on a site."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PbsCommands:
    qsub: str = "qsub"
    qstat: str = "qstat"
    qdel: str = "qdel"
    qselect: str = "qselect"
    # Lists the nodes and their cores (queue snapshots).
    pbsnodes: str = "pbsnodes"
    # Searches the server's accounting logs (when the site lets the gateway read them).
    grep: str = "grep"
