"""Site configurations: `site-configs/<name>.yaml`, validated by a strict pydantic schema.

Public API: `SiteConfig` (the schema), `load_site_config(path)`,
`load_site_configs(directory)`, `site_shape(config)`, `site_config_json_schema()`,
`SiteConfigError` (an `Invalid` whose `problems` name each field to fix).
"""

from gateway.siteconfig.access import Account, AccountMode, Accounts, JumpHost, Ssh
from gateway.siteconfig.cluster import Interconnect, MpiFlavor, MpiLauncherKind, Partition
from gateway.siteconfig.errors import FieldProblem, SiteConfigError
from gateway.siteconfig.keys import KeyRef, resolve_key_path
from gateway.siteconfig.loading import (
    dump_site_config,
    load_site_config,
    load_site_configs,
    parse_site_config,
    site_config_data,
    validate_site_config,
    with_updates,
)
from gateway.siteconfig.model import SiteConfig, SiteState
from gateway.siteconfig.provision import fill_template
from gateway.siteconfig.scheduler import LOCAL_KIND, Scheduler, known_kinds
from gateway.siteconfig.schema import render_json_schema, site_config_json_schema
from gateway.siteconfig.shape import site_shape

__all__ = [
    "LOCAL_KIND",
    "Account",
    "AccountMode",
    "Accounts",
    "FieldProblem",
    "Interconnect",
    "JumpHost",
    "KeyRef",
    "MpiFlavor",
    "MpiLauncherKind",
    "Partition",
    "Scheduler",
    "SiteConfig",
    "SiteConfigError",
    "SiteState",
    "Ssh",
    "dump_site_config",
    "fill_template",
    "known_kinds",
    "load_site_config",
    "load_site_configs",
    "parse_site_config",
    "render_json_schema",
    "resolve_key_path",
    "site_config_data",
    "site_config_json_schema",
    "site_shape",
    "validate_site_config",
    "with_updates",
]
