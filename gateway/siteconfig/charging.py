"""A site config's `charging` section: what a job costs here beyond the charge factor
(SU per core-hour, `charge_factor`). All optional; each change becomes a new rate-card
version, so a quote made earlier keeps its price."""

from __future__ import annotations

from pydantic import Field

from gateway.accounting.rates import Rate
from gateway.accounting.units import milli
from gateway.siteconfig.fields import Section


class SiteCharging(Section):
    """Optional weights and a minimum, in SU."""

    gb_hour: float = Field(default=0.0, ge=0, le=1e6,
                           description="SU per GiB of memory per hour, on top of cores.")
    gpu_hour: float = Field(default=0.0, ge=0, le=1e6, description="SU per GPU-hour.")
    node_hour: float = Field(default=0.0, ge=0, le=1e6, description="SU per node-hour.")
    minimum: float = Field(default=0.0, ge=0, le=1e6,
                           description="Least SU a run that ran is charged.")

    def rate(self, charge_factor: float) -> Rate:
        """The rate card these weights and `charge_factor` (SU per core-hour) make."""
        return Rate(core_hour_milli=milli(charge_factor), gb_hour_milli=milli(self.gb_hour),
                    gpu_hour_milli=milli(self.gpu_hour), node_hour_milli=milli(self.node_hour),
                    minimum_milli=milli(self.minimum))
