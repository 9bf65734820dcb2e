"""Outputs sent on after a run (pure): a job spec's `deliver` entries.

    deliver:
      - {glob: results/summary.txt, url: "file:///srv/gridgate/alice/summary.txt"}
      - {glob: "results/**", strip: results, url: "https://store.example.org/run1/"}

Once a run has completed, the worker collects what each glob matches (as `outputs` are
collected in fetch mode: verified into the gateway store) and sends it on before the job
completes. A glob without `strip` names one file, which must exist, and goes to the URL
as it is; with `strip` (a directory), every match goes to the URL followed by its path
below that directory, and matching nothing is no fault (an empty directory). A failed run
sends nothing; a failed send fails the job (its outputs stay in the store to download).

Destinations: `file:///PATH` inside a directory the admin lets the job's owner use
(`settings.file_url_dirs`; the path is taken as written, as TES clients write it, never
percent-decoded), `site://SITE/PATH` (written as the owner's own account at a site where
they have one: gateway.services.data.site_writes) and `https://...` (an HTTP PUT, e.g.
to a presigned URL).
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Self
from urllib.parse import urlsplit

from pydantic import AfterValidator, Field, ValidationInfo, model_validator

from gateway.domain.spec_parts import Strict, submitted
from gateway.domain.staging import MAX_PATH_CHARS, check_https, check_job_path, parse_source

MAX_DELIVERIES = 4096
_GLOB_CHARS = {"*": "[*]", "?": "[?]", "[": "[[]"}


class DestinationKind(StrEnum):
    FILE = "file"
    HTTPS = "https"
    SITE = "site"


@dataclass(frozen=True)
class Destination:
    """A parsed destination: a path on the gateway's host (FILE), an https URL, or a path
    at a federated site (SITE, with `site`)."""

    kind: DestinationKind
    target: str
    site: str | None = None


def file_url_path(value: str) -> str:
    """The absolute, normalised path of `file:///PATH` (or `file://localhost/PATH`);
    ValueError saying what is wrong."""
    rest = value.removeprefix("file://")
    if rest == value:
        raise ValueError("a file URL starts with file://")
    if rest.startswith("localhost/"):
        rest = rest.removeprefix("localhost")
    if not rest.startswith("/"):
        raise ValueError("file:// URLs name a path on the gateway's host: file:///PATH")
    if any(ord(c) < 32 or c == "\x7f" for c in rest):
        raise ValueError("a file URL must not contain control characters")
    if len(rest) > MAX_PATH_CHARS or posixpath.normpath(rest) != rest or rest == "/":
        raise ValueError("file:///PATH needs a normalised absolute path (no '..', '.', '//' "
                         "or trailing '/')")
    return rest


def parse_destination(value: str, *, directory: bool = False) -> Destination:
    """Where `value` sends files; ValueError saying what is accepted. `directory`: the URL
    is a prefix each file's path is appended to (a trailing '/' is then allowed)."""
    if value.startswith("file://"):
        return Destination(DestinationKind.FILE,
                           file_url_path(value.rstrip("/") if directory else value))
    if value.startswith("site://"):
        source = parse_source(value.rstrip("/") if directory else value)
        assert source.path is not None
        return Destination(DestinationKind.SITE, source.path, source.site)
    parts = urlsplit(value)
    if parts.scheme.lower() == "https":
        check_https(parts)
        if any(ord(c) < 33 or c == "\x7f" for c in value):
            raise ValueError("an https URL must not contain spaces or control characters")
        if directory and (parts.query or parts.fragment):
            raise ValueError("an https URL files are appended to must not carry a query or "
                             "a fragment")
        return Destination(DestinationKind.HTTPS, value)
    scheme = parts.scheme or value.partition(":")[0]
    raise ValueError(f"gridgate cannot send outputs to {scheme or 'such'} URLs; give "
                     "file:///PATH (a directory the admin lets you use), "
                     "site://SITE/PATH (a site where you have your own account) or https://")


def literal_glob(path: str) -> str:
    """An output glob that matches exactly `path` (its '*', '?' and '[' taken literally)."""
    return "".join(_GLOB_CHARS.get(c, c) for c in path)


def _glob(value: str, info: ValidationInfo) -> str:
    return check_job_path(value, glob=True, submitted=submitted(info))


def _strip(value: str, info: ValidationInfo) -> str:
    return check_job_path(value, submitted=submitted(info))


class Delivery(Strict):
    """Send what `glob` matched after a completed run to `url`."""

    glob: Annotated[str, Field(min_length=1, max_length=MAX_PATH_CHARS, description=(
        "An output glob relative to the job directory; without `strip` it must name one "
        "file, which the run must leave.")), AfterValidator(_glob)]
    url: Annotated[str, Field(min_length=1, max_length=8192, description=(
        "file:///PATH (inside a directory the admin lets you use), site://SITE/PATH (at a "
        "site where you have your own account) or an https:// URL (sent with PUT). With "
        "`strip`, the prefix each file's path is appended to."))]
    strip: Annotated[str, Field(min_length=1, max_length=MAX_PATH_CHARS, description=(
        "A directory of the job's: each match goes to `url` followed by its path below "
        "it (none matching is no fault).")), AfterValidator(_strip)] | None = None

    @model_validator(mode="after")
    def _destination(self) -> Self:
        parse_destination(self.url, directory=self.strip is not None)
        if self.strip is not None and not self.glob.startswith(self.strip + "/"):
            raise ValueError(f"the glob {self.glob!r} must lie below strip {self.strip!r}")
        return self

    @property
    def destination(self) -> Destination:
        return parse_destination(self.url, directory=self.strip is not None)

    def url_of(self, path: str) -> str:
        """The URL the matched output `path` goes to."""
        if self.strip is None:
            return self.url
        return f"{self.url.rstrip('/')}/{path.removeprefix(self.strip + '/')}"


Deliveries = Annotated[list[Delivery], Field(max_length=MAX_DELIVERIES, description=(
    "Outputs sent on once the run has completed, before the job completes (outputs_mode "
    "fetch): to file:///PATH in a directory the admin lets you use, to site://SITE/PATH "
    "at a site where you have your own account, or by PUT to an https:// URL."))]
