"""/api/v1/projects: projects, their members and balances.

    GET    /projects                        the projects you may read, with your standing
    POST   /projects                        {name, description?} (administrators)
    GET    /projects/{name}                 members and allocations
    POST   /projects/{name}/members         {user, pi?} (the project's PI or an admin)
    DELETE /projects/{name}/members/{user}
    GET    /projects/{name}/balance         per allocation: awarded, used, held, available

A project you may not read answers 404, exactly as one that does not exist.
"""

from __future__ import annotations

from urllib.parse import quote

from fastapi import APIRouter, Response
from pydantic import BaseModel, ConfigDict, Field

from gateway.api.deps import JobsReader, JobsWriter, RuntimeDep
from gateway.api.params.paging import DEFAULT_LIMIT, Cursor, Limit
from gateway.api.project_schemas import (
    BalanceOut,
    MemberOut,
    ProjectList,
    ProjectOut,
    balance_out,
    member_out,
    project_out,
    summary_out,
)
from gateway.api.schemas import json_response
from gateway.services import cursors, projects
from gateway.services.money import balances
from gateway.services.projects import MAX_DESCRIPTION

router = APIRouter(prefix="/api/v1", tags=["projects"])


class ProjectCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=64, description="e.g. climate-2026")
    description: str | None = Field(default=None, max_length=MAX_DESCRIPTION)


class MemberAdd(BaseModel):
    model_config = ConfigDict(extra="forbid")

    user: str = Field(min_length=1, max_length=255, description="A gateway username.")
    pi: bool = Field(default=False, description="Make them a PI of the project.")


@router.get("/projects", response_model=ProjectList)
def list_projects(principal: JobsReader, runtime: RuntimeDep, limit: Limit = DEFAULT_LIMIT,
                  cursor: Cursor = None) -> Response:
    """The projects you may read: yours, or every project for auditors and admins;
    follow `next_cursor` for the next page."""
    with runtime.readers() as session:
        found = cursors.from_list(projects.summaries(session, principal, runtime.clock()),
                                  limit, cursor, lambda s: s.seen.project.name)
        document = ProjectList(items=[summary_out(s) for s in found.rows],
                               next_cursor=found.next_cursor)
    return json_response(ProjectList, document)


@router.post("/projects", status_code=201, response_model=ProjectOut)
def create_project(body: ProjectCreate, principal: JobsWriter, runtime: RuntimeDep
                   ) -> Response:
    """Create a project (administrators); then name its PI with POST .../members."""
    now = runtime.clock()
    with runtime.unit_of_work() as session:
        project = projects.create(session, principal, body.name, body.description, now)
        document = project_out(projects.detail(session, principal, project.name, now))
    return json_response(ProjectOut, document, 201,
                         {"Location": f"/api/v1/projects/{quote(body.name, safe='')}"})


@router.get("/projects/{name}", response_model=ProjectOut)
def get_project(name: str, principal: JobsReader, runtime: RuntimeDep) -> Response:
    with runtime.readers() as session:
        document = project_out(projects.detail(session, principal, name, runtime.clock()))
    return json_response(ProjectOut, document)


@router.post("/projects/{name}/members", status_code=201, response_model=MemberOut,
             responses={200: {"model": MemberOut,
                              "description": "Already a member: their role is set"}})
def add_member(name: str, body: MemberAdd, principal: JobsWriter, runtime: RuntimeDep
               ) -> Response:
    """Add a member or change their role: 201 when new, 200 when they were one."""
    with runtime.unit_of_work() as session:
        member, created = projects.set_member(session, principal, name, body.user, body.pi)
    return json_response(MemberOut, member_out(member), 201 if created else 200)


@router.delete("/projects/{name}/members/{user}", status_code=204)
def remove_member(name: str, user: str, principal: JobsWriter, runtime: RuntimeDep
                  ) -> Response:
    with runtime.unit_of_work() as session:
        projects.remove_member(session, principal, name, user)
    return Response(status_code=204)


@router.get("/projects/{name}/balance", response_model=BalanceOut)
def project_balance(name: str, principal: JobsReader, runtime: RuntimeDep) -> Response:
    """Every allocation of the project: awarded, transferred, used, held, available."""
    now = runtime.clock()
    with runtime.readers() as session:
        seen, found = balances.project_balance(session, principal, name, now)
        document = balance_out(seen.project.name, found, now)
    return json_response(BalanceOut, document)
