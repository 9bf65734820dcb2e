"""`gridgate site check`: each container runtime the site declares, asked for its release.

`RUNTIME --version` runs as the site account through the adapter's transport (on the login
node, which on most sites carries the compute nodes' software; nothing is submitted), and
the answer is compared with the declaration: routing trusts the declared releases (the
oldest release whose flags the launch lines use), so a mismatch fails the check. What the
runtimes print (`parse_version`) is pure:
- apptainer: `apptainer version 1.2.5` on stdout (cobra's version template, PACKAGE_NAME);
  Apptainer's `singularity` compatibility command says `apptainer` too;
- SingularityCE: `singularity-ce version 3.11.0`; SingularityCE before 3.8 and the legacy
  Singularity: `singularity version 3.7.4`;
- ch-run (Charliecloud): the bare release, `0.31`, on stderr.
Distribution suffixes (`1.2.5-1.el8`) are ignored; a declared release matches a reported
one that starts with the same numbers (declared 1.2 matches 1.2.5).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from adapters.errors import AdapterError
from adapters.transport import Transport
from containers.runtimes import MIN_RUNTIME_VERSION, RuntimeKind
from containers.site_caps import RuntimeOffer
from containers.versions import Version
from gateway.services.sites.check_report import Check, Status
from gateway.siteconfig import SiteConfig

# What each runtime calls itself in `--version`; None: it prints the release alone.
PRODUCTS: dict[RuntimeKind, tuple[str, ...] | None] = {
    RuntimeKind.APPTAINER: ("apptainer",),
    RuntimeKind.SINGULARITY: ("singularity-ce", "singularity"),
    RuntimeKind.CHARLIECLOUD: None,
}
_NAMED = re.compile(r"(?P<product>[a-z][a-z-]*) version (?P<version>[0-9]+(?:\.[0-9]+)*)")
_BARE = re.compile(r"(?P<version>[0-9]+(?:\.[0-9]+)*)")


@dataclass(frozen=True)
class Reported:
    """What `--version` said: the product (None for ch-run) and its release."""

    product: str | None
    version: Version


def parse_version(kind: RuntimeKind, output: str) -> Reported | None:
    """The release `RUNTIME --version` printed (stdout and stderr together), or None."""
    for line in output.splitlines():
        line = line.strip()
        match = (_BARE.match(line) if PRODUCTS[kind] is None else _NAMED.match(line))
        if match is not None:
            product = match.groupdict().get("product")
            return Reported(product, Version.parse(".".join(
                match["version"].split(".")[:4])))
    return None


def _matches(declared: Version, reported: Version) -> bool:
    return reported.parts[:len(declared.parts)] == declared.parts


def judge(offer: RuntimeOffer, where: str, reported: Reported) -> Check:
    """The check of the declared `offer` (site config field `where`) against what the site
    reported."""
    name, command = f"runtime {offer.kind.value}", " ".join(offer.argv)
    products = PRODUCTS[offer.kind]
    if products is not None and reported.product not in products:
        kind = next((k.value for k, names in PRODUCTS.items()
                     if names and reported.product in names), None)
        hint = f": declare it as kind {kind}" if kind else ""
        return Check(name, Status.FAIL, f"`{command} --version` says {reported.product} "
                                        f"{reported.version}, not {offer.kind.value}{hint}")
    if not _matches(offer.version, reported.version):
        return Check(name, Status.FAIL, f"declared {offer.kind.value} {offer.version}, but "
                                        f"`{command} --version` says {reported.version}: "
                                        f"set {where} to \"{reported.version}\"")
    least, flag = MIN_RUNTIME_VERSION[offer.kind]
    note = (f"; older than {least}, the first with {flag}, so routing gives it no jobs"
            if reported.version < least else "")
    return Check(name, Status.OK, f"`{command}` is {offer.kind.value} {reported.version}, "
                                  f"as declared{note}")


def check_runtimes(config: SiteConfig, transport: Transport, timeout: float) -> list[Check]:
    """Each declared runtime's `--version` through `transport`, judged (see module)."""
    checks = []
    for i, offer in enumerate(config.container_caps().runtimes):
        name = f"runtime {offer.kind.value}"
        argv = [*offer.argv, "--version"]
        shown = " ".join(argv)
        try:
            result = transport.run(argv, timeout=timeout)
        except AdapterError as exc:
            checks.append(Check(name, Status.FAIL, f"`{shown}`: {exc.message}"))
            continue
        output = (result.stdout + b"\n" + result.stderr).decode(errors="replace")
        if result.exit_status != 0:
            last = (result.stderr.decode(errors="replace").strip().splitlines()
                    or ["no message"])[-1]
            checks.append(Check(name, Status.FAIL,
                                f"`{shown}` exited {result.exit_status}: {last}"))
            continue
        reported = parse_version(offer.kind, output)
        if reported is None:
            checks.append(Check(name, Status.FAIL, f"`{shown}` printed no release of "
                                                   f"{offer.kind.value}: "
                                                   f"{output.strip()[:200]!r}"))
            continue
        checks.append(judge(offer, f"containers.runtimes[{i}].version", reported))
    return checks


def runtime_check_names(config: SiteConfig) -> list[str]:
    """The names `check_runtimes` reports under (for the checks skipped when SSH fails)."""
    return [f"runtime {r.kind.value}" for r in config.containers.runtimes]
