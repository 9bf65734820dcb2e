"""Projects, memberships and allocation administration as services, on SQLite and
PostgreSQL: who may create, manage and read; what a listing sums; an allocation's status
from its dates; refusals that come before any lookup."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest

from gateway.db.bank_models import Allocation
from gateway.db.engine import transaction
from gateway.domain.errors import Conflict, Forbidden, Invalid, NotFound
from gateway.runtime import Runtime
from gateway.services import projects
from gateway.services.money import allocation_admin, balances
from gateway.services.money.allocations import Grant
from gateway.services.money.balances import status_of
from tests.conftest import MakeUser
from tests.services.bank_fixtures import NOW, YEAR

DAY = timedelta(days=1)


@pytest.mark.parametrize(("stored", "starts", "ends", "expected"), [
    ("active", -DAY, DAY, "active"),
    ("active", DAY, 2 * DAY, "pending"),
    ("suspended", -DAY, DAY, "suspended"),
    ("suspended", -2 * DAY, -DAY, "expired"),  # expiry is final, whatever else
    ("active", -2 * DAY, timedelta(0), "expired"),  # the end itself is past
])
def test_status_from_the_dates(stored: str, starts: timedelta, ends: timedelta,
                               expected: str) -> None:
    allocation = Allocation(status=stored, starts_at=NOW + starts, ends_at=NOW + ends)
    assert status_of(allocation, NOW) == expected


def test_create_manage_and_list(runtime: Runtime, make_user: MakeUser) -> None:
    admin = make_user("root", roles=("admin",)).principal
    pi, bob, eve = (make_user(n).principal for n in ("pia", "bob", "eve"))
    with transaction(runtime.sessions) as s:
        projects.create(s, admin, "climate", "runs", NOW)
        with pytest.raises(Forbidden):
            projects.create(s, pi, "mine", None, NOW)
        with pytest.raises(Invalid) as bad:
            projects.create(s, admin, "climate\n", None, NOW)
        assert bad.value.extra == {"field": "name"}
        assert projects.set_member(s, admin, "climate", "pia", pi=True)[1] is True
        member, created = projects.set_member(s, pi, "climate", "bob", pi=False)
        assert (member.role, created) == ("member", True)
        with pytest.raises(Forbidden):  # a member reads the project but manages nothing
            projects.set_member(s, bob, "climate", "eve", pi=False)
        with pytest.raises(NotFound):  # a stranger learns nothing
            projects.set_member(s, eve, "climate", "eve", pi=False)
        a = allocation_admin.grant(s, admin, Grant("climate", "*", 5000, NOW - YEAR, NOW + YEAR),
                                   [], "award", NOW)
        allocation_admin.grant(s, admin, Grant("climate", "*", 7000, NOW - YEAR, NOW - DAY),
                               [], "last year's", NOW - YEAR)
        found = {p.seen.project.name: p for p in projects.summaries(s, pi, NOW)}
        assert set(found) == {"climate", "~pia"}
        # Only the allocation in force counts towards what the project may spend.
        assert (found["climate"].members, found["climate"].available_milli) == (2, 5000)
        assert [v.allocation.id for v in balances.list_allocations(s, eve, None, NOW)] == []
        assert [v.status for v in balances.list_allocations(s, bob, "climate", NOW)] == [
            "expired", "active"]
        assert a.id in {v.allocation.id for v in balances.list_allocations(s, admin, None, NOW)}
        detail = projects.detail(s, bob, "climate", NOW)
        assert [(m.user, m.role) for m in detail.members] == [("bob", "member"), ("pia", "pi")]
        projects.set_member(s, pi, "climate", "bob", pi=True)  # a second PI...
        projects.remove_member(s, bob, "climate", "pia")  # ...may take the first one out
        with pytest.raises(Conflict):
            projects.remove_member(s, bob, "climate", "bob")  # but not leave it without


def test_admin_actions_refuse_before_any_lookup(runtime: Runtime, make_user: MakeUser,
                                                caplog: pytest.LogCaptureFixture) -> None:
    admin = make_user("root", roles=("admin",)).principal
    auditor = make_user("aud", roles=("auditor",)).principal
    with transaction(runtime.sessions) as s:
        # Nothing named exists: still Forbidden, so a refusal confirms nothing.
        with pytest.raises(Forbidden):
            allocation_admin.grant(s, auditor, Grant("nosuch", "*", 1, NOW, NOW + DAY), [],
                                   "x", NOW)
        for call in (lambda: allocation_admin.adjust(s, auditor, 424242, 1, "x", NOW),
                     lambda: allocation_admin.transfer(s, auditor, 1, 2, 1, "x", NOW),
                     lambda: allocation_admin.set_status(s, auditor, 424242, "suspended", "x")):
            with pytest.raises(Forbidden):
                call()
        projects.create(s, admin, "climate", None, NOW)
        with pytest.raises(Invalid) as blank:
            allocation_admin.grant(s, admin, Grant("climate", "*", 1, NOW, NOW + DAY), [],
                                   " \t", NOW)
        assert blank.value.extra == {"field": "reason"}
        a = allocation_admin.grant(s, admin, Grant("climate", "*", 1000, NOW, NOW + DAY), [],
                                   "award", NOW)
        with caplog.at_level(logging.INFO, logger="gateway.services.money.allocation_admin"):
            allocation_admin.set_status(s, admin, a.id, "suspended", "report overdue")
        assert f"allocation {a.id} suspended by root: report overdue" in caplog.text
        assert balances.view(s, a, NOW).status == "suspended"
