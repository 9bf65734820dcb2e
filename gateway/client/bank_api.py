"""The bank's side of the REST client: projects, allocations and balances, reports and
usage (docs/committees/accounting.md). `GatewayClient` has these methods too."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any, Literal

from gateway.client.transport import ClientBase, name_segment
from gateway.schemas.projects import (
    AllocationList,
    AllocationOut,
    BalanceOut,
    MemberOut,
    ProjectList,
    ProjectOut,
    ProjectSummaryOut,
    TransferOut,
)
from gateway.schemas.reports import (
    AdjustmentReport,
    AllocationReport,
    JobUsageList,
    UsageReport,
    WaitReport,
)

# Service units: sent as decimal text, so no float rounding on the way.
Amount = Decimal | int | str
ReportKind = Literal["allocations", "usage", "waits", "adjustments"]
REPORT_DOCUMENTS: dict[str, Any] = {"allocations": AllocationReport, "usage": UsageReport,
                                    "waits": WaitReport, "adjustments": AdjustmentReport}


class BankMethods(ClientBase):
    """Projects, allocations, balances, reports and usage."""

    # -- projects, allocations and balances --------------------------------------------

    def projects(self) -> list[ProjectSummaryOut]:
        """GET /projects: the projects you may read, with your standing in each."""
        return self._every_page(ProjectList, "/projects")

    def project(self, name: str) -> ProjectOut:
        """GET /projects/{name}: members and allocations (404 unless you may read it)."""
        return self._document(ProjectOut, "GET", f"/projects/{name_segment(name)}")

    def create_project(self, name: str, description: str | None = None) -> ProjectOut:
        """POST /projects (administrators)."""
        body = {"name": name, **({"description": description} if description else {})}
        return self._document(ProjectOut, "POST", "/projects", json=body)

    def add_member(self, project: str, user: str, *, pi: bool = False) -> MemberOut:
        """POST /projects/{name}/members: add `user` (or change their role)."""
        return self._document(MemberOut, "POST", f"/projects/{name_segment(project)}/members",
                              json={"user": user, "pi": pi})

    def remove_member(self, project: str, user: str) -> None:
        """DELETE /projects/{name}/members/{user}."""
        self._request("DELETE", f"/projects/{name_segment(project)}/members/{name_segment(user)}")

    def balance(self, project: str) -> BalanceOut:
        """GET /projects/{name}/balance: per allocation awarded, used, held, available."""
        return self._document(BalanceOut, "GET", f"/projects/{name_segment(project)}/balance")

    def allocations(self, project: str | None = None) -> list[AllocationOut]:
        """GET /allocations: of `project`, or of every project you may read."""
        params = {"project": project} if project is not None else {}
        return self._every_page(AllocationList, "/allocations", params)

    def grant(self, project: str, pool: str, amount: Amount, ends_at: datetime, reason: str,
              *, starts_at: datetime | None = None, credit_limit: Amount | None = None
              ) -> AllocationOut:
        """POST /allocations (administrators): grant `amount` SU at `pool` (a site or *)."""
        body: dict[str, Any] = {"project": project, "pool": pool, "amount": str(amount),
                                "ends_at": ends_at.isoformat(), "reason": reason}
        if starts_at is not None:
            body["starts_at"] = starts_at.isoformat()
        if credit_limit is not None:
            body["credit_limit"] = str(credit_limit)
        return self._document(AllocationOut, "POST", "/allocations", json=body)

    def adjust(self, allocation_id: int, amount: Amount, reason: str) -> AllocationOut:
        """POST /allocations/{id}:adjust: add SU (negative: take back)."""
        return self._document(AllocationOut, "POST", f"/allocations/{int(allocation_id)}:adjust",
                              json={"amount": str(amount), "reason": reason})

    def transfer(self, source: int, target: int, amount: Amount, reason: str) -> TransferOut:
        """POST /allocations:transfer: move SU from one allocation to another."""
        return self._document(TransferOut, "POST", "/allocations:transfer",
                              json={"source": source, "target": target, "amount": str(amount),
                                    "reason": reason})

    def set_allocation_status(self, allocation_id: int, action: Literal["suspend", "resume"],
                              reason: str) -> AllocationOut:
        """POST /allocations/{id}:suspend or :resume."""
        return self._document(AllocationOut, "POST",
                              f"/allocations/{int(allocation_id)}:{action}",
                              json={"reason": reason})

    def report(self, kind: ReportKind, params: Sequence[tuple[str, str]] = ()) -> Any:
        """GET /reports/{kind} (allocations, usage, waits, adjustments) as its document."""
        return self._document(REPORT_DOCUMENTS[kind], "GET", f"/reports/{kind}",
                              params=list(params))

    def report_csv(self, kind: ReportKind | Literal["usage-jobs"],
                   params: Sequence[tuple[str, str]] = ()) -> str:
        """The same report as CSV text (`usage-jobs`: GET /usage)."""
        path = "/usage" if kind == "usage-jobs" else f"/reports/{kind}"
        return self._request("GET", path, params=[*params, ("format", "csv")]).text

    def usage(self, params: Sequence[tuple[str, str]] = ()) -> JobUsageList:
        """GET /usage: your jobs (a PI's `project`: the project's) with elapsed time,
        cores and charge."""
        return self._document(JobUsageList, "GET", "/usage", params=list(params))

