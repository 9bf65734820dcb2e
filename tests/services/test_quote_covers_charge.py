"""The ledger's rule between a quote and a charge (a property test): for every job spec
and every site's rate card, no run that holds no more than the job asked for is charged
more than the job's quote there, since the lien is taken from the quote. The quote, the
charge and the forecast read a job's cores and walltime through one rule
(gateway.accounting.requested): the quote from the spec as submitted, the charge and the
forecast from the spec as stored.

Sites are generated as the rate cards their configs can make (charge factor and the
`charging:` weights and minimum); their limits change neither price (routing excludes a
site whose limits a job exceeds, gateway.scheduling.feasibility).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from adapters.base import NativeState
from adapters.reasons import Reason
from adapters.usage import UsageRecord
from gateway.accounting.rates import Rate
from gateway.accounting.requested import requested
from gateway.domain.jobspec import JobSpec
from gateway.domain.states import AttemptState
from gateway.services.money import quotes, settlement
from gateway.services.money.settlement import RunToSettle
from gateway.services.routing import forecasting
from gateway.siteconfig.charging import SiteCharging
from tests.services.bank_fixtures import NOW

SITE = "alpha"
REFUND_CAP = 100_000
DAY = 86_400


def _walltime(seconds: int, as_text: bool) -> int | str:
    """`seconds` as given in a spec: an int, or Slurm's `[D-][HH:]MM:SS`."""
    if not as_text:
        return seconds
    days, rest = divmod(seconds, DAY)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    clock = f"{hours}:{minutes:02d}:{secs:02d}"
    return f"{days}-{clock}" if days else clock


@st.composite
def specs(draw: st.DrawFn) -> JobSpec:
    """Job specs over what `Resources` allows: nodes, ranks (placed or not), threads,
    memory per node, walltime as seconds or text; as a job or a job array."""
    nodes = draw(st.integers(1, 16))
    ranks = draw(st.integers(nodes, nodes * 64))
    resources: dict[str, Any] = {
        "nodes": nodes, "ranks": ranks, "threads_per_rank": draw(st.integers(1, 32)),
        "walltime": _walltime(draw(st.integers(1, 14 * DAY)), draw(st.booleans()))}
    if draw(st.booleans()):
        resources["ranks_per_node"] = draw(st.integers(-(-ranks // nodes), 128))
    if draw(st.booleans()):
        resources["memory_mb"] = draw(st.integers(1, 2_000_000))
    data: dict[str, Any] = {"name": "p", "executable": "/bin/app", "resources": resources,
                            "partition": draw(st.none() | st.sampled_from(["batch", "long"]))}
    if draw(st.booleans()):  # each task is quoted, held and charged as the spec says
        last = draw(st.integers(0, 99))
        data["array"] = draw(st.sampled_from([f"0-{last}", f"0-{last}:2", f"0-{last}%4"]))
    return JobSpec.model_validate(data)


def _su(draw: st.DrawFn, top: float) -> float:
    return draw(st.floats(0, top, allow_nan=False, allow_infinity=False))


@st.composite
def rates(draw: st.DrawFn) -> Rate:
    """A site's rate card, as its config makes it (gateway.siteconfig)."""
    charging = SiteCharging.model_validate({
        "gb_hour": _su(draw, 50), "gpu_hour": _su(draw, 50), "node_hour": _su(draw, 50),
        "minimum": _su(draw, 5)})
    return charging.rate(draw(st.floats(0.001, 100, allow_nan=False)))


@st.composite
def runs(draw: st.DrawFn, spec: JobSpec) -> UsageRecord:
    """A usage record of one run within what the job asked for (cores, nodes, memory, no
    GPUs), of any elapsed time (a site's grace may run past the walltime) and any end."""
    asked = requested(spec.resources)
    started = draw(st.booleans())
    memory = (None if asked.memory_mb is None
              else draw(st.none() | st.integers(1, asked.memory_mb)))
    reason = draw(st.sampled_from([None, Reason.NODE_FAIL, Reason.PREEMPTED,
                                   Reason.BOOT_FAIL]))
    return UsageRecord(
        native_id="1", run=0,
        state=draw(st.sampled_from([NativeState.COMPLETED, NativeState.FAILED,
                                    NativeState.CANCELLED])),
        reason=reason, exit_code=0, started_at=NOW if started else None,
        ended_at=NOW + timedelta(hours=1),
        elapsed=draw(st.integers(0, 3 * asked.seconds)) if started else 0,
        cores=draw(st.integers(1, asked.cores)) if started else 0,
        nodes=draw(st.integers(1, spec.resources.nodes)) if started else 0,
        source="sacct", raw="x", memory_mb=memory)


@hsettings(max_examples=200, deadline=None, derandomize=True)
@given(data=st.data(), spec=specs(), rate=rates())
def test_no_run_within_the_request_is_charged_more_than_the_quote(
        data: st.DataObject, spec: JobSpec, rate: Rate) -> None:
    price = quotes.price(spec, rate)
    stored = spec.model_dump(mode="json")  # what the jobs row keeps
    terms = settlement.job_terms(stored, None, {SITE: rate})
    record = data.draw(runs(spec))
    assert settlement.charge(terms, SITE, record, REFUND_CAP).amount_milli <= price
    # A run whose record never came, estimated from its attempt's start and end.
    ended = data.draw(st.none() | st.integers(0, 3 * terms.walltime_seconds))
    lost = RunToSettle("job", 1, "2", "alice", NOW,
                       None if ended is None else NOW + timedelta(seconds=ended),
                       AttemptState.COMPLETED)
    for made in settlement.estimated_records([lost], [], terms.cores, terms.walltime_seconds):
        assert settlement.charge(terms, SITE, made, REFUND_CAP).amount_milli <= price
    # The forecast queues the same cores for the same time as the charge's terms.
    cores, limit, queue = forecasting.shape(stored)
    assert (cores, limit, queue) == (terms.cores, terms.walltime_seconds, spec.partition or "")


@hsettings(max_examples=100, deadline=None, derandomize=True)
@given(spec=specs(), rate=rates())
def test_a_run_that_holds_all_it_asked_for_its_walltime_is_charged_the_quote(
        spec: JobSpec, rate: Rate) -> None:
    # The bound is tight: the quote and the charge price the same cores, nodes, memory
    # and walltime, from the spec as submitted and as stored.
    asked = requested(spec.resources)
    terms = settlement.job_terms(spec.model_dump(mode="json"), None, {SITE: rate})
    whole = UsageRecord(
        native_id="1", run=0, state=NativeState.COMPLETED, reason=None, exit_code=0,
        started_at=NOW, ended_at=NOW + timedelta(seconds=asked.seconds),
        elapsed=asked.seconds, cores=asked.cores, nodes=spec.resources.nodes, source="sacct",
        raw="x", memory_mb=asked.memory_mb)
    assert settlement.charge(terms, SITE, whole, REFUND_CAP).amount_milli == quotes.price(
        spec, rate)
