"""IBM Spectrum LSF: pure builders and parsers for bsub, bjobs, bkill and bqueues. Tested
on recorded outputs whose format comes from the LSF documentation and public source (LSF
cannot be installed on the testbed machine).
"""

from adapters.lsf.commands import LsfCommands
from adapters.lsf.dialect import LsfDialect

__all__ = ["LsfCommands", "LsfDialect"]
