"""Errors raised by adapters. `transient` says whether trying again later may help."""

from __future__ import annotations


class AdapterError(Exception):
    """Base of every adapter failure."""

    transient = False

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class SubmitRejected(AdapterError):
    """The scheduler refused the job (bad partition, too many nodes, ...). Final."""


class SiteUnavailable(AdapterError):
    """The site cannot be reached or did not answer in time. Try again later."""

    transient = True


class UnknownJob(AdapterError):
    """The scheduler has no record of this job id."""
