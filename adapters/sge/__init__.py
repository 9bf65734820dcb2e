"""Grid Engine: pure builders and parsers for qsub, qstat, qacct and qdel.

One module per command (submit, status, accounting, cancel, queues), the batch script
(script), the state and failure-code maps (states), and `SgeDialect` tying them together
for `adapters.batch.adapter.BatchAdapter`.
"""

from adapters.sge.commands import SgeCommands
from adapters.sge.dialect import SgeDialect

__all__ = ["SgeCommands", "SgeDialect"]
