"""`notify` in a job spec: its checks, and which state change calls for which mail."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from gateway.domain.jobspec import JobSpec
from gateway.domain.notify import MailType, Notify, kind_of
from rules.text import EMAIL

B, E, F = MailType.BEGIN, MailType.END, MailType.FAIL


def spec(**notify: object) -> JobSpec:
    return JobSpec.model_validate({"name": "x", "executable": "true", "notify": notify})


def test_all_is_every_kind_and_repeats_are_refused() -> None:
    assert spec(mail=["all"]).notify == Notify(mail=[MailType.ALL])
    assert Notify(mail=[MailType.ALL]).kinds == {B, E, F}
    assert Notify(mail=[B]).kinds == {B}
    with pytest.raises(ValidationError, match="name each mail type once"):
        spec(mail=["end", "end"])
    with pytest.raises(ValidationError):
        spec(mail=["END"])  # the API's words are lower case (the CLI lowers sbatch's)
    with pytest.raises(ValidationError):
        spec(mail=["end"], cc="x@example.org")


@pytest.mark.parametrize("address", [
    "ada@example.org", "a.b+tag@sub.example.org", "o'neil@example.ie"])
def test_addresses_taken(address: str) -> None:
    assert spec(mail=["end"], to=address).notify is not None


@pytest.mark.parametrize("address", [
    "ada@example.org\n", "ada@example.org\r\nBcc: eve@example.org", "Ada <ada@example.org>",
    "ada@example.org, eve@example.org", "ada@localhost", "ada@@example.org", "@example.org",
    "ada.@example.org", "ada@-example.org", "ada@exa mple.org", "ädä@example.org",
    "a" * 250 + "@example.org"])
def test_addresses_refused(address: str) -> None:
    with pytest.raises(ValidationError):
        spec(mail=["end"], to=address)
    assert len(address) > 254 or not EMAIL.matches(address)


@pytest.mark.parametrize(("to_state", "cancel_requested", "asked", "kind"), [
    ("RUNNING", False, {B, E}, B),
    ("RUNNING", False, {E, F}, None),
    ("QUEUED", False, {B, E, F}, None),
    ("COMPLETED", False, {E}, E),
    ("COMPLETED", False, {F}, None),
    ("FAILED", False, {F}, F),
    ("FAILED", False, {E}, E),
    ("FAILED", False, {E, F}, F),  # one mail for a failure asked both ways
    ("CANCELLED", True, {F}, None),  # the owner's cancel is no failure...
    ("CANCELLED", True, {E, F}, E),  # ...but an end
    ("CANCELLED", False, {F}, F),  # cancelled by an admin or the site: a failure
])
def test_which_change_calls_for_which_mail(to_state: str, cancel_requested: bool,
                                           asked: set[MailType], kind: MailType | None
                                           ) -> None:
    assert kind_of(to_state, cancel_requested, frozenset(asked)) is kind
