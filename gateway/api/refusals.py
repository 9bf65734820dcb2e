"""A submission its project cannot pay for is answered 422 and not kept; the refusal
is still a fact its project's PIs and the submitter can read (an event), recorded here
in a transaction of its own once the submission's has rolled back."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from gateway.domain.principal import Principal
from gateway.runtime import Runtime
from gateway.services.money import refusals
from gateway.services.money.bank import InsufficientFunds

log = logging.getLogger(__name__)


@contextmanager
def refusal_recorded(runtime: Runtime, principal: Principal) -> Iterator[None]:
    """Around the submission's unit of work (outside it, so it has rolled back): record
    an InsufficientFunds raised in it, then let it go on to its problem document."""
    try:
        yield
    except InsufficientFunds as exc:
        if exc.refusal is not None:
            try:
                with runtime.unit_of_work() as session:
                    refusals.record(session, exc.refusal, owner_id=principal.user_id,
                                    actor=principal.display, at=runtime.clock())
            except Exception:  # the 422 is the answer; a lost event must not turn it 500
                log.exception("could not record the refused lien of %s", principal.user_id)
        raise
