"""The audit log's sequencer step: every `audit_head_seconds`, the entries committed since
are taken into the tree and a new head is signed (gateway.services.money.audit_tree). Every
worker runs it; the database lets one at a time do the work, and the others find
nothing left."""

from __future__ import annotations

import time

from gateway.repositories.money.audit_tree import TreeHead
from gateway.runtime import Runtime
from gateway.services.money import audit_tree
from gateway.worker.context import StepContext


def take_in(runtime: Runtime, *, every: float | None = None) -> TreeHead | None:
    """One sequencer step now (gateway.services.money.audit_tree.take_in), waiting
    `every` seconds after the newest head (None: the setting `audit_head_seconds`)."""
    wait = runtime.settings.audit_head_seconds if every is None else every
    return audit_tree.take_in(runtime.sessions, runtime.keys, runtime.clock(), wait)


class AuditSequencer:
    """When this worker next takes the log's waiting entries in."""

    def __init__(self, ctx: StepContext) -> None:
        self.ctx = ctx
        self._next = 0.0

    def run(self) -> bool:
        """One step when due; True when it signed a head."""
        now = time.monotonic()
        if now < self._next:
            return False
        self._next = now + self.ctx.rt.settings.audit_head_seconds
        # The clock is checked again against the newest head, whoever signed it.
        return take_in(self.ctx.rt) is not None
