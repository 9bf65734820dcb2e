"""Slurm: pure builders and parsers for sbatch, squeue, sacct, scancel and sinfo.

One module per command (submit, status, accounting, cancel, queues), the batch script
(script), the state map (states), and `SlurmDialect` tying them together for
`adapters.batch.adapter.BatchAdapter`.
"""

from adapters.slurm.commands import SlurmCommands
from adapters.slurm.dialect import SlurmDialect

__all__ = ["SlurmCommands", "SlurmDialect"]
