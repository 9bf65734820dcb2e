"""Completing a template (`provisioned_by: ...`) with what its provisioner generated."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gateway.siteconfig.errors import FieldProblem, SiteConfigError
from gateway.siteconfig.loading import site_config_data, validate_site_config
from gateway.siteconfig.model import SiteConfig


def fill_template(template: SiteConfig, *, host: str, host_keys: Sequence[str],
                  key_paths: Mapping[str, str], port: int | None = None,
                  source: str = "<site config>") -> SiteConfig:
    """`template` with its login node's address and pinned host keys, and each account's key.

    `key_paths` maps a Unix account name (`accounts.community.user`, `accounts.mapped.*.user`)
    to the absolute path of its private key; every account the template names needs one.
    The result is validated and complete (`is_complete`), or SiteConfigError says why.
    """
    if template.provisioned_by is None or template.ssh is None or template.accounts is None:
        raise SiteConfigError(source, [FieldProblem(
            "provisioned_by", "not a template: only a remote site with `provisioned_by` set "
                              "can be filled in")])
    data = site_config_data(template)
    data["ssh"].update(host=host, host_keys=list(host_keys))
    if port is not None:
        data["ssh"]["port"] = port
    accounts: dict[str, Any] = data["accounts"]
    entries = ([("accounts.community", accounts["community"])] if "community" in accounts
               else [])
    entries += [(f"accounts.mapped.{user}", account)
                for user, account in accounts.get("mapped", {}).items()]
    missing = []
    for field, account in entries:
        path = key_paths.get(account["user"])
        if path is None:
            missing.append(FieldProblem(f"{field}.key", (
                f"no generated key for account {account['user']!r}: the provisioner must "
                "give one")))
        else:
            account["key"] = {"path": path}
    if missing:
        raise SiteConfigError(source, missing)
    config = validate_site_config(data, source)
    if not config.is_complete:
        raise SiteConfigError(source, [FieldProblem("ssh.host_keys", (
            "still empty after filling in: give the site's host key line(s)"))])
    return config
