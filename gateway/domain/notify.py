"""`notify` in a job spec: which mails (as Slurm's `--mail-type`) go to which address,
and which state change of a job a mail of each kind reports. Pure."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import AfterValidator, Field, field_validator

from gateway.domain.spec_parts import Strict, rule_schema
from gateway.domain.states import JobState
from rules.text import EMAIL, EMAIL_MAX


class MailType(StrEnum):
    """When a mail goes out, as `sbatch --mail-type` names it.

    begin: the job starts running (reaches RUNNING at a site).
    end: the job reaches any final state (COMPLETED, FAILED or CANCELLED).
    fail: the job ends FAILED (its program failed, its walltime ran out, its site lost
    it, or it could not be submitted or staged), or CANCELLED without its owner asking
    (an administrator or the site cancelled it). A cancel the owner asked for is no
    failure, as with Slurm's FAIL: it is reported by `end` only.
    all: begin, end and fail.
    """

    BEGIN = "begin"
    END = "end"
    FAIL = "fail"
    ALL = "all"


# The kinds a mail is recorded as; `all` stands for these.
KINDS = (MailType.BEGIN, MailType.END, MailType.FAIL)


def _address(value: str) -> str:
    return EMAIL.check(value)


class Notify(Strict):
    """Mail about this job. Only addresses the gateway knows are yours are taken."""

    mail: Annotated[list[MailType], Field(max_length=4, description=(
        "When to send mail: begin (it starts running), end (it ends, any final state), "
        "fail (it fails, or is cancelled without you asking), all (all three)."))] = []
    to: Annotated[str, Field(max_length=EMAIL_MAX), AfterValidator(_address),
                  rule_schema(EMAIL)] | None = Field(default=None, description=(
        "Where mail goes: your address from your identity provider (the default), or one "
        "in a domain the gateway's administrator allows."))

    @field_validator("mail")
    @classmethod
    def _no_repeats(cls, value: list[MailType]) -> list[MailType]:
        if len(set(value)) != len(value):
            raise ValueError("name each mail type once")
        return value

    @property
    def kinds(self) -> frozenset[MailType]:
        """The kinds asked for, `all` expanded."""
        if MailType.ALL in self.mail:
            return frozenset(KINDS)
        return frozenset(self.mail)


def kind_of(to_state: str, cancel_requested: bool, asked: frozenset[MailType]
            ) -> MailType | None:
    """The kind of mail a job's move to `to_state` calls for, among those `asked`, or None.
    An ending that is a failure and asked both `end` and `fail` is one mail, of kind fail."""
    if to_state == JobState.RUNNING:
        return MailType.BEGIN if MailType.BEGIN in asked else None
    if to_state not in {s.value for s in JobState if s.is_final}:
        return None
    failed = to_state == JobState.FAILED or (to_state == JobState.CANCELLED
                                             and not cancel_requested)
    if failed and MailType.FAIL in asked:
        return MailType.FAIL
    return MailType.END if MailType.END in asked else None
