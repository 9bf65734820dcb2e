"""PBS Professional / OpenPBS: pure builders and parsers for qsub, qstat, qselect, qdel and
the server's accounting log. Tested on recorded outputs whose format comes from the PBS
documentation and public source (PBS cannot be installed on the testbed machine).
"""

from adapters.pbs.commands import PbsCommands
from adapters.pbs.dialect import PbsDialect

__all__ = ["PbsCommands", "PbsDialect"]
