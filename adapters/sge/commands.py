"""Where the Grid Engine client commands are on a site (its site config may move them)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SgeCommands:
    qsub: str = "qsub"
    qstat: str = "qstat"
    qacct: str = "qacct"
    qdel: str = "qdel"
