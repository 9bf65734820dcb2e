"""Rate cards and costs: what holding cores (and memory, GPUs, nodes) for a time costs
at a site. Integer arithmetic, rounded up to the next milli-SU."""

from __future__ import annotations

from dataclasses import dataclass

_SECONDS_PER_HOUR = 3600
_MB_PER_GB = 1024


@dataclass(frozen=True)
class Rate:
    """A site's prices in milli-SU per hour of each resource (core-hour = the site's
    charge factor x 1000), and the least a run that ran is charged."""

    core_hour_milli: int
    gb_hour_milli: int = 0
    gpu_hour_milli: int = 0
    node_hour_milli: int = 0
    minimum_milli: int = 0

    def __post_init__(self) -> None:
        if min(self.core_hour_milli, self.gb_hour_milli, self.gpu_hour_milli,
               self.node_hour_milli, self.minimum_milli) < 0:
            raise ValueError("rates are never negative")


# The default: a charge factor of 1.0, nothing else.
ONE_SU_PER_CORE_HOUR = Rate(core_hour_milli=1000)


@dataclass(frozen=True)
class Usage:
    """Resources held for `seconds` of wall-clock time."""

    seconds: int
    cores: int
    nodes: int = 1
    gpus: int = 0
    memory_mb: int | None = None


def cost(rate: Rate, usage: Usage) -> int:
    """milli-SU for `usage` at `rate`; 0 when nothing ran, else at least the minimum."""
    if usage.seconds <= 0:
        return 0
    per_hour_scaled = (  # milli-SU per hour, x 1024 so memory stays in integers
        _MB_PER_GB * (usage.cores * rate.core_hour_milli + usage.nodes * rate.node_hour_milli
                      + usage.gpus * rate.gpu_hour_milli)
        + (usage.memory_mb or 0) * rate.gb_hour_milli)
    scaled = usage.seconds * per_hour_scaled
    divisor = _SECONDS_PER_HOUR * _MB_PER_GB
    return max(-(-scaled // divisor), rate.minimum_milli)
