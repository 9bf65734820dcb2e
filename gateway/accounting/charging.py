"""What one run is charged, from the site's usage record. Pure.

The rules, in order (each charge carries the sentence of the rule that set it):
- a run that never ran (cancelled while pending, a revoked hedge, elapsed 0) or that the
  scheduler says failed at start (Slurm BOOT_FAIL, Grid Engine `failed` before the job
  script) is charged nothing;
- a run is charged for its elapsed time from the site's own record, at most the walltime
  it asked for (a site's grace past the limit is not the user's to pay);
- a run the site ended (node failure, preemption) is charged, then refunded up to a cap;
- a requeued job has one record per run, each charged by these rules.
"""

from __future__ import annotations

from dataclasses import dataclass

from adapters.reasons import Reason
from adapters.usage import UsageRecord
from gateway.accounting.rates import Rate, Usage, cost
from gateway.accounting.units import su

# Ends the site caused, not the job: refunded (up to the cap).
SITE_CAUSED = frozenset({Reason.NODE_FAIL, Reason.PREEMPTED})


@dataclass(frozen=True)
class Charge:
    """A run's charge and the refund given with it (never more than the charge)."""

    amount_milli: int
    refund_milli: int
    rule: str

    @property
    def net_milli(self) -> int:
        return self.amount_milli - self.refund_milli


def charge_for(record: UsageRecord, rate: Rate, walltime_seconds: int,
               refund_cap_milli: int) -> Charge:
    """The charge for one run that asked for `walltime_seconds`."""
    if record.failed_at_start:
        return Charge(0, 0, f"failed at start ({record.reason or record.state}): "
                            "nothing charged")
    if record.started_at is None or record.elapsed <= 0:
        return Charge(0, 0, "never ran: nothing charged")
    seconds = min(record.elapsed, walltime_seconds)
    amount = cost(rate, Usage(seconds, record.cores, record.nodes, record.gpus,
                              record.memory_mb))
    rule = (f"{record.cores} cores x {seconds} s at {su(rate.core_hour_milli)} SU "
            "per core-hour")
    if record.elapsed > walltime_seconds:
        rule += f" (ran {record.elapsed} s; charged up to the walltime asked for)"
    if record.reason in SITE_CAUSED:
        refund = min(amount, refund_cap_milli)
        return Charge(amount, refund, f"{rule}; ended by the site ({record.reason}): "
                                      f"{su(refund)} SU refunded")
    return Charge(amount, 0, rule)
