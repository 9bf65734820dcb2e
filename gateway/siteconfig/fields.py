"""Field types of a site config, each with a validator whose message says what to write."""

from __future__ import annotations

import ipaddress
from typing import Annotated, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, PlainSerializer

from gateway.domain.field_issues import FieldIssues as FieldIssues  # re-exported
from gateway.domain.field_issues import Loc as Loc  # re-exported
from gateway.domain.jobspec import parse_walltime
from gateway.siteconfig.keys import no_private_key
from rules.text import (
    ACCOUNT,
    MPI_FLAVOR,
    PARTITION,
    PROJECT_NAME,
    QOS,
    SITE_NAME,
    UNIX_ACCOUNT,
    TextRule,
)

UNLIMITED = "UNLIMITED"


class Section(BaseModel):
    """A part of a site config: unknown fields are errors, values never change."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def named(rule: TextRule, description: str) -> list[Any]:
    """Annotated metadata for a name of kind `rule`: matched whole, shown in the schema."""
    return [AfterValidator(no_private_key), AfterValidator(rule.check),
            Field(description=description, json_schema_extra={"pattern": rule.json_pattern})]


# Kinds only site configs have; the shared ones come from rules.text.
COMMAND_NAME = TextRule("command name", r"[a-z][a-z0-9_-]{0,31}",
                        "use the scheduler command's name, e.g. sbatch")
GATEWAY_USER = TextRule("gateway user name", r"\S{1,255}",
                        "use the gateway username, without spaces")

SiteName = Annotated[str, *named(
    SITE_NAME, "The site's name; also its file name: site-configs/<name>.yaml.")]
PartitionName = Annotated[str, *named(
    PARTITION, "The scheduler's partition (Slurm) or queue (Grid Engine, PBS, LSF).")]
QosName = Annotated[str, *named(QOS, "A quality of service of the scheduler (Slurm).")]
FlavorName = Annotated[str, *named(
    MPI_FLAVOR, "The name jobs ask for in `mpi.flavor`, e.g. mpich or openmpi.")]
CommandName = Annotated[str, *named(COMMAND_NAME, "A scheduler command, e.g. sbatch or qsub.")]
LocalUser = Annotated[str, *named(UNIX_ACCOUNT, "A Unix account on the site.")]
GatewayUser = Annotated[str, *named(GATEWAY_USER, "A gateway user, by gateway username.")]
SchedulerAccount = Annotated[str, *named(ACCOUNT, "A scheduler account or project name.")]
ProjectName = Annotated[str, *named(PROJECT_NAME, "A gateway project, by name.")]


def _check_time_zone(value: str) -> str:
    if value == "UTC":
        return value  # also where the system has no time zone database
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"{value!r} is not a known time zone: use an IANA name such as UTC "
                         "or Europe/Berlin") from None
    return value


TimeZone = Annotated[str, AfterValidator(no_private_key), AfterValidator(_check_time_zone)]

_HOST_LABEL = TextRule("host name label", r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)",
                      "1-63 letters, digits or '-', not starting or ending with '-'")


def check_host(value: str) -> str:
    """A DNS name or an IP address, nothing else (no user, no port)."""
    if "@" in value:
        raise ValueError(f"{value!r} has a user part: give the host only; the Unix account "
                         "comes from `accounts`")
    try:
        ipaddress.ip_address(value)
        return value
    except ValueError:
        pass
    if value.count(":") == 1 and value.rsplit(":", 1)[1].isdigit():
        raise ValueError(f"{value!r} has a port: put the port in `port`")
    labels = value.rstrip(".").split(".")
    if not value or len(value) > 253 or not all(_HOST_LABEL.matches(label) for label in labels):
        raise ValueError(f"{value!r} is not a host name or IP address (e.g. login.example.org "
                         "or 10.123.0.10)")
    return value


Host = Annotated[str, AfterValidator(no_private_key), AfterValidator(check_host),
                 Field(description="Host name or IP address of the site's login node.")]
Port = Annotated[int, Field(ge=1, le=65535, description="TCP port of sshd.")]


def _walltime_in(value: Any) -> int | None:
    if isinstance(value, str) and value.strip().upper() in (UNLIMITED, "INFINITE"):
        return None
    try:
        return parse_walltime(value)
    except ValueError as exc:
        raise ValueError(f"{exc} (e.g. 3600, 12:00:00, 2-00:00:00 or UNLIMITED)") from None


def _walltime_out(value: int | None) -> int | str:
    return UNLIMITED if value is None else value


Walltime = Annotated[
    int | None,
    BeforeValidator(_walltime_in, json_schema_input_type=int | str),
    PlainSerializer(_walltime_out, return_type=int | str),
    Field(description="Longest run allowed: seconds, `[D-][HH:]MM:SS`, or UNLIMITED."),
]


def _one_line(value: str) -> str:
    if "\n" in value or "\r" in value or "\0" in value:
        raise ValueError("write one line per list item (no line breaks)")
    return value


SetupLine = Annotated[
    str, AfterValidator(no_private_key), AfterValidator(_one_line),
    Field(description="One line of shell run before the MPI launcher. TRUSTED admin input: it "
                      "runs verbatim in every job's batch script; never put user data here."),
]


def _argv_item(value: str) -> str:
    _one_line(value)
    if not value:
        raise ValueError("an argument cannot be empty")
    return value


ArgvItem = Annotated[str, AfterValidator(no_private_key), AfterValidator(_argv_item)]
