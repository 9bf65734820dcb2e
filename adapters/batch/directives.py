"""Scheduler directives in a user's own script (`#SBATCH`, `#$`, `#PBS`, `#BSUB`). Pure.

The gateway decides everything that sets who is charged, who the job runs as and what it
gets: account/project, partition/queue, QOS, reservation, resources, walltime, job name,
working directory, output paths, environment export. Those options are given on the submit
command line (where they win over directives), and a user directive could still add what
the command line does not set (a QOS, a reservation, another user's group). So a user's
directive lines pass only when they ask for mail; any other directive line is refused,
naming the line. What passes is rewritten from the checked values (never copied raw) into
the batch script the gateway submits; the user's script itself is stored as a separate file
that the batch script runs, so nothing else in it reaches the scheduler.

Which lines a scheduler reads: Slurm and PBS stop at the first line that is not blank or a
comment (sbatch(1), POSIX qsub); Grid Engine and LSF read directive lines anywhere in the
script (sge_submit(1), bsub(1)). A line counts as a directive when, after leading blanks,
it starts with the prefix: a superset of what each scheduler reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from adapters.errors import SubmitRejected
from rules.text import TextRule

# Mail addresses or user names, comma separated; never starting with '-' (not an option).
MAIL_USERS = TextRule(
    "mail recipient list", r"[A-Za-z0-9_][A-Za-z0-9._%+-]*(?:@[A-Za-z0-9.-]+)?"
    r"(?:,[A-Za-z0-9_][A-Za-z0-9._%+-]*(?:@[A-Za-z0-9.-]+)?)*",
    "user names or addresses, comma separated")
MAIL_USER = TextRule(
    "mail recipient", r"[A-Za-z0-9_][A-Za-z0-9._%+-]*(?:@[A-Za-z0-9.-]+)?",
    "one user name or address")
SLURM_MAIL_TYPES = TextRule(
    "mail type list", r"[A-Za-z0-9_]+(?:,[A-Za-z0-9_]+)*", "e.g. END,FAIL")
SGE_MAIL_EVENTS = TextRule("mail events", r"[beasn]+(?:,[beasn]+)*", "letters of b, e, a, s, n")
PBS_MAIL_EVENTS = TextRule("mail events", r"[abejn]+", "letters of a, b, e, j, or n")
_SHOWN_CHARS = 120


@dataclass(frozen=True)
class DirectiveRules:
    """One scheduler's directives: its prefix, where it reads them, and the options a user
    script may set (`passed`: option -> rule for its value, None for a flag)."""

    scheduler: str
    prefix: str
    whole_script: bool
    passed: Mapping[str, TextRule | None]
    # Long options written `--opt=value` (Slurm); otherwise `-opt value`.
    equals: bool = False

    def describe(self) -> str:
        """The options that pass, e.g. `--mail-type, --mail-user`."""
        return ", ".join(self.passed)


SLURM = DirectiveRules("Slurm", "#SBATCH", False,
                       {"--mail-type": SLURM_MAIL_TYPES, "--mail-user": MAIL_USER},
                       equals=True)
SGE = DirectiveRules("Grid Engine", "#$", True, {"-m": SGE_MAIL_EVENTS, "-M": MAIL_USERS})
PBS = DirectiveRules("PBS", "#PBS", False, {"-m": PBS_MAIL_EVENTS, "-M": MAIL_USERS})
LSF = DirectiveRules("LSF", "#BSUB", True, {"-B": None, "-N": None, "-u": MAIL_USER})
ALL = (SLURM, SGE, PBS, LSF)


class DirectiveRefused(ValueError):
    """A user directive line that may not reach the scheduler; the message names it."""


def _directive_lines(script: str, rules: DirectiveRules) -> list[tuple[int, str]]:
    """(line number, stripped text) of each line the scheduler would read as a directive."""
    found = []
    # Split on newlines only, as the schedulers do (str.splitlines also splits on \v, \f...).
    for number, line in enumerate(script.split("\n"), start=1):
        stripped = line.strip()
        if number == 1 and stripped.startswith("#!"):
            continue
        if stripped and not stripped.startswith("#") and not rules.whole_script:
            break
        if stripped.startswith(rules.prefix):
            found.append((number, stripped))
    return found


def _canonical(words: list[str], rules: DirectiveRules) -> str | None:
    """The directive rewritten from its checked parts ("" for a bare prefix, which asks for
    nothing), or None when it may not pass."""
    if not words:
        return ""
    option, value = words[0], None
    if rules.equals and "=" in option and len(words) == 1:
        option, value = option.split("=", 1)
    elif len(words) == 2:
        value = words[1]
    elif len(words) != 1:
        return None
    if option not in rules.passed:
        return None
    rule = rules.passed[option]
    if rule is None:
        return f"{rules.prefix} {option}" if value is None else None
    if value is None or not rule.matches(value):
        return None
    return f"{rules.prefix} {option}{'=' if rules.equals else ' '}{value}"


def passed_directives(script: str | None, rules: DirectiveRules) -> list[str]:
    """The user's directive lines that pass, rewritten; DirectiveRefused naming the first
    line that may not."""
    if not script:
        return []
    passed = []
    for number, line in _directive_lines(script, rules):
        canonical = _canonical(line[len(rules.prefix):].split(), rules)
        if canonical is None:
            shown = line if len(line) <= _SHOWN_CHARS else line[:_SHOWN_CHARS] + "..."
            raise DirectiveRefused(
                f"script line {number} {shown!r}: {rules.scheduler} reads lines starting with "
                f"{rules.prefix!r} as submit options, and the gateway itself sets the account, "
                "partition or queue, QOS, resources, job name and output paths of a job. A "
                f"script's {rules.prefix} lines may only ask for mail ({rules.describe()}, one "
                "option per line); set resources, partition and project in the job spec and "
                "remove this line.")
        if canonical:
            passed.append(canonical)
    return passed


def check_all(script: str | None) -> None:
    """DirectiveRefused for a script with a directive line any scheduler would refuse: a job
    may be routed to any site, so its script must pass everywhere."""
    for rules in ALL:
        passed_directives(script, rules)


def adapter_directives(script: str | None, rules: DirectiveRules) -> list[str]:
    """`passed_directives` for an adapter: a refusal is a SubmitRejected."""
    try:
        return passed_directives(script, rules)
    except DirectiveRefused as exc:
        raise SubmitRejected(str(exc)) from None
