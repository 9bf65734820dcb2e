"""The audit chain's pure rules, table-driven: the canonical form, the link hash, and the
first broken link verify names for each kind of tampering."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone

import pytest

from gateway.accounting.audit_chain import (
    GENESIS,
    Fault,
    Link,
    canonical,
    canonical_time,
    link_hash,
    verify,
)

T0 = datetime(2026, 11, 25, 12, 0, 0, 123456, tzinfo=UTC)


def chain(n: int) -> list[Link]:
    """n well-linked events, ids 1..n."""
    links, prev = [], GENESIS
    for i in range(1, n + 1):
        at, data = T0 + timedelta(seconds=i), {"n": i, "legs": [{"amount_milli": -i}]}
        digest = link_hash(prev, at, "job.state", f"job:{i}", "alice", data)
        links.append(Link(i, at, "job.state", f"job:{i}", "alice", data, prev, digest))
        prev = digest
    return links


def head_of(links: list[Link]) -> tuple[int, str]:
    return links[-1].id, links[-1].hash


def finder(links: list[Link]) -> Callable[[str], int | None]:
    return {link.hash: link.id for link in links}.get


def test_canonical_form_sorts_keys_and_spells_time_in_utc() -> None:
    eastern = T0.astimezone(timezone(timedelta(hours=-5)))
    assert canonical(eastern, "charge", "job:x", "bob", {"b": 1, "a": [2, "é"]}) == (
        '{"actor":"bob","at":"2026-11-25T12:00:00.123456Z","data":{"a":[2,"é"],"b":1},'
        '"kind":"charge","subject":"job:x"}').encode()
    assert link_hash(GENESIS, T0, "k", "s", "a", {}) == hashlib.sha256(
        GENESIS.encode() + canonical(T0, "k", "s", "a", {})).hexdigest()


def test_naive_times_are_refused() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        canonical_time(datetime(2026, 1, 1))


@pytest.mark.parametrize("field, value", [
    ("kind", "charge"), ("subject", "job:other"), ("actor", "mallory"),
    ("data", {"n": 2, "legs": [{"amount_milli": 0}]}), ("at", T0),
])
def test_every_field_is_in_the_hash(field: str, value: object) -> None:
    links = chain(3)
    links[1] = replace(links[1], **{field: value})
    verdict = verify(links, head_of(links), finder(links))
    assert verdict.broken is not None
    assert (verdict.broken.event_id, verdict.broken.fault, verdict.events) == (
        2, Fault.EDITED, 1)


def _delete(links: list[Link]) -> list[Link]:
    return [link for link in links if link.id != 3]


def _delete_first(links: list[Link]) -> list[Link]:
    return links[1:]


def _swap(links: list[Link]) -> list[Link]:
    """Rows 2 and 4 trade their whole contents (hashes too), ids stay in place."""
    out = list(links)
    out[1], out[3] = replace(links[3], id=2), replace(links[1], id=4)
    return out


def _swap_contents(links: list[Link]) -> list[Link]:
    """Rows 2 and 4 trade what they say but keep their hashes."""
    out = list(links)
    out[1] = replace(links[1], data=links[3].data, subject=links[3].subject)
    out[3] = replace(links[3], data=links[1].data, subject=links[1].subject)
    return out


def _rehash(links: list[Link]) -> list[Link]:
    """Row 3 edited and its own hash recomputed: the next link no longer points at it."""
    out = list(links)
    edited = replace(links[2], data={"n": 999})
    out[2] = replace(edited, hash=link_hash(edited.prev_hash, edited.at, edited.kind,
                                            edited.subject, edited.actor, edited.data))
    return out


@pytest.mark.parametrize("tamper, broken_at, fault", [
    (_delete, 4, Fault.DELETED),
    (_delete_first, 2, Fault.DELETED),
    (_swap, 2, Fault.REORDERED),
    (_swap_contents, 2, Fault.EDITED),
    (_rehash, 4, Fault.DELETED),
])
def test_first_broken_link_is_named(tamper: Callable[[list[Link]], list[Link]], broken_at: int,
                                    fault: Fault) -> None:
    original = chain(5)
    links = tamper(original)
    verdict = verify(links, head_of(original), finder(links))
    assert verdict.broken is not None
    assert (verdict.broken.event_id, verdict.broken.fault) == (broken_at, fault)
    assert f"event {broken_at}" in verdict.broken.detail


def test_reordered_names_where_the_link_points() -> None:
    # Row 2 now holds the 4th event, which follows the 3rd (still at row 3).
    links = _swap(chain(5))
    verdict = verify(links, head_of(chain(5)), finder(links))
    assert verdict.broken is not None
    assert "event 2 links to event 3, not to event 1" in verdict.broken.detail


def test_an_intact_chain_and_its_head_hold() -> None:
    links = chain(4)
    verdict = verify(links, head_of(links), finder(links))
    assert (verdict.events, verdict.last_id, verdict.broken) == (4, 4, None)
    assert verify([], (0, GENESIS), finder([])).broken is None
    assert verify([], None, finder([])).broken is None


def test_deleted_tail_is_caught_by_the_head() -> None:
    links = chain(5)
    verdict = verify(links[:3], head_of(links), finder(links[:3]))
    assert verdict.broken is not None
    assert (verdict.broken.event_id, verdict.broken.fault, verdict.events) == (
        5, Fault.TRUNCATED, 3)
    assert "ends at event 3" in verdict.broken.detail
    everything = verify([], head_of(links), finder([]))
    assert everything.broken is not None and everything.broken.fault is Fault.TRUNCATED


def test_events_without_a_head_are_broken() -> None:
    links = chain(2)
    verdict = verify(links, None, finder(links))
    assert verdict.broken is not None and verdict.broken.fault is Fault.DELETED
