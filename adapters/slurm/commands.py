"""Where the Slurm client commands are on a site (its site config may move them)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SlurmCommands:
    sbatch: str = "sbatch"
    squeue: str = "squeue"
    sacct: str = "sacct"
    scancel: str = "scancel"
    sinfo: str = "sinfo"
    srun: str = "srun"
    sacctmgr: str = "sacctmgr"
    # Runs a command with SLURM_TIME_FORMAT=%s, so every time is epoch seconds (no zones).
    env: str = "env"

    def with_epoch_times(self, *argv: str) -> tuple[str, ...]:
        return (self.env, "SLURM_TIME_FORMAT=%s", *argv)
