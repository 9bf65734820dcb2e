"""Text checked against a pattern: one rule per kind of text, each matched whole. Pure.

Python's `$` also matches before a final newline (`re.match(r"^x$", "x\\n")` succeeds), so
a name like "LD_PRELOAD\\n" slipped through `^...$` checks. A `TextRule` only ever uses
`re.fullmatch`, its pattern carries no anchors, and each kind of text below has exactly one
rule, shared by the gateway (job specs, site configs) and the adapters (their own checks
before anything reaches a site). Kinds used in one module only define their `TextRule` there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass(frozen=True)
class TextRule:
    """What a kind of text may look like: `pattern` must match the whole value.

    `what` names the kind in messages ("environment variable name"); `hint` says what to
    write instead ("letters, digits and '_', not starting with a digit"). Patterns spell
    out ASCII classes (`[0-9]`, not `\\d`, which also matches other scripts' digits).
    """

    what: str
    pattern: str
    hint: str
    _regex: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.pattern.startswith("^") or self.pattern.endswith("$"):
            raise ValueError(f"{self.what}: a TextRule pattern is matched whole; drop ^ and $")
        object.__setattr__(self, "_regex", re.compile(self.pattern))

    def fullmatch(self, value: str) -> re.Match[str] | None:
        """The match of the whole of `value`, or None."""
        return self._regex.fullmatch(value)

    def matches(self, value: str) -> bool:
        """True when all of `value` has this kind's form."""
        return self._regex.fullmatch(value) is not None

    def problem(self, value: str) -> str | None:
        """None when `value` is valid, else a message that names it and says what to write."""
        if self.matches(value):
            return None
        return f"{value!r} is not a valid {self.what}: {self.hint}"

    def check(self, value: str) -> str:
        """`value` when valid, else ValueError (pydantic turns it into a 422)."""
        problem = self.problem(value)
        if problem is not None:
            raise ValueError(problem)
        return value

    @property
    def json_pattern(self) -> str:
        """The pattern for a JSON Schema: there (ECMA-262) `$` only matches at the end."""
        return f"^(?:{self.pattern})$"


ENV_NAME = TextRule(
    "environment variable name", r"[A-Za-z_][A-Za-z0-9_]*",
    "use letters, digits and '_', and do not start with a digit")
LABEL_KEY = TextRule(
    "label key", r"[A-Za-z0-9](?:[A-Za-z0-9._/-]{0,62}[A-Za-z0-9])?",
    "1-64 letters, digits, '.', '_', '/', '-', starting and ending with a letter or digit")
# Job names every scheduler accepts as they are (PBS: first character alphanumeric; SGE
# refuses / : @ \ * ?; Slurm's --name lists split on commas). Gateway tags are `gw-<uuid>[.N]`.
JOB_TAG = TextRule(
    "job tag", r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}",
    "a scheduler job name: letters, digits, '.', '_', '-'; at most 128")
SITE_NAME = TextRule(
    "site name", r"[a-z][a-z0-9-]{0,31}",
    "use 1-32 lowercase letters, digits or '-', starting with a letter")
# A zone a job may be routed to: a site's name, or a zone sites declare (same words).
ZONE = TextRule(
    "zone", r"[a-z][a-z0-9-]{0,31}",
    "name a site or a zone sites declare: 1-32 lowercase letters, digits or '-', starting "
    "with a letter")
PARTITION = TextRule(
    "partition or queue name", r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}",
    "use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit "
    "(e.g. batch, all.q)")
QOS = TextRule(
    "QOS name", r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}",
    "use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit (e.g. long)")
ACCOUNT = TextRule(
    "scheduler account", r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}",
    "use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit")
# A Unix account at a site: what site configs map users to and certificates name.
UNIX_ACCOUNT = TextRule(
    "Unix account name", r"[A-Za-z_][A-Za-z0-9_.-]{0,31}",
    "use 1-32 letters, digits, '_', '.' or '-', starting with a letter or '_'")
# A gateway project (jobs are charged to one); personal projects start with '~' instead.
PROJECT_NAME = TextRule(
    "project name", r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}",
    "use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit "
    "(e.g. climate-2026)")
MPI_FLAVOR = TextRule(
    "MPI flavor name", r"[a-z0-9][a-z0-9._-]{0,31}",
    "use 1-32 lowercase letters, digits, '.', '_' or '-' (e.g. mpich, openmpi)")
# The start of a gateway job id (a UUID), as people type one: `d3eca39f`. Used by the API's
# `id_prefix` filter and by the client before it asks.
JOB_ID_PREFIX = TextRule(
    "job id prefix", r"[0-9a-f-]{1,36}",
    "give the first characters of a job id: digits 0-9, letters a-f and '-' (at most 36)")
# Slurm's time format; `d`, `h`, `m`, `s` are the groups `parse` reads.
DURATION = TextRule(
    "duration", r"(?:(?P<d>[0-9]+)-)?(?:(?P<h>[0-9]+):)?(?P<m>[0-9]+):(?P<s>[0-9]+)",
    "use seconds or [D-][HH:]MM:SS")
# A mail address as a relay takes it in an envelope: a dot-atom local part and a DNS name
# (RFC 5321 4.1.2 without quoted local parts or address literals); no space, comma or line
# break, so one address is one recipient and never a header; at most EMAIL_MAX characters.
EMAIL_MAX = 254
EMAIL = TextRule(
    "mail address",
    r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*"
    r"@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+",
    "write one address like ada@example.org (letters, digits and . _ + - before the @, "
    "a domain name after it)")
