"""Problems a cross-field check finds, each naming the field below the model it checks.

Pydantic can only blame the model a validator belongs to; raising `FieldIssues` there
carries each sub-field, so a site config's report names `ssh.host_keys` and the API's 422
names `mpi.flavor`, not just the whole document (gateway.siteconfig.errors and
gateway.api.problems read `issues` back from the error's context).
"""

from __future__ import annotations

Loc = tuple[int | str, ...]


class FieldIssues(ValueError):
    """One or more (location below the validated model, message) pairs."""

    def __init__(self, issues: list[tuple[Loc, str]]) -> None:
        super().__init__("; ".join(f"{'.'.join(map(str, loc))}: {message}"
                                   for loc, message in issues))
        self.issues = issues
