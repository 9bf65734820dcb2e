"""Reading site configs from YAML: one file, or a directory of `<name>.yaml` files."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from gateway.siteconfig.errors import FieldProblem, SiteConfigError, problems_from
from gateway.siteconfig.model import SiteConfig

SUFFIXES = (".yaml", ".yml")


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys (PyYAML silently keeps the last one)."""


def _mapping_without_duplicates(loader: _StrictLoader, node: yaml.MappingNode) -> Any:
    first_line: dict[Any, int] = {}
    # Only keys written in this mapping: a merge key (<<: *anchor) may bring keys that
    # the mapping then overrides on purpose.
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node, deep=True)
        try:
            hash(key)
        except TypeError:
            continue  # SafeLoader reports unhashable keys itself
        line = key_node.start_mark.line + 1
        if key in first_line:
            raise yaml.constructor.ConstructorError(
                None, None,
                f"duplicate key {key!r} (first at line {first_line[key]}): keep one",
                key_node.start_mark)
        first_line[key] = line
    return loader.construct_mapping(node, deep=True)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
                              _mapping_without_duplicates)


def _parse_yaml(text: str, source: str) -> dict[str, Any]:
    try:
        data = yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else "(yaml)"
        problem = getattr(exc, "problem", None) or str(exc)
        raise SiteConfigError(source, [FieldProblem(where, f"not valid YAML: {problem}")]) \
            from None
    if data is None:
        raise SiteConfigError(source, [FieldProblem("(config)", "the file is empty: start "
                                                                "from a shipped site config")])
    if not isinstance(data, dict):
        raise SiteConfigError(source, [FieldProblem(
            "(config)", "the file must hold one mapping (`name: ...`, `scheduler: ...`), not "
                        f"a {type(data).__name__}")])
    return data


def validate_site_config(data: Mapping[str, Any], source: str = "<site config>") -> SiteConfig:
    """A SiteConfig from already-parsed data, or SiteConfigError naming every bad field."""
    try:
        return SiteConfig.model_validate(dict(data))
    except ValidationError as exc:
        raise SiteConfigError(source, problems_from(exc, SiteConfig, data)) from None


def parse_site_config(text: str, source: str = "<site config>") -> SiteConfig:
    """A SiteConfig from YAML text."""
    return validate_site_config(_parse_yaml(text, source), source)


def load_site_config(path: Path) -> SiteConfig:
    """The site config in the YAML file at `path` (templates and descriptive sites too)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise SiteConfigError(str(path), [FieldProblem("(file)", f"cannot read it: {reason}")]) \
            from None
    return parse_site_config(text, str(path))


def load_site_configs(directory: Path, *, include_templates: bool = False) -> list[SiteConfig]:
    """Every `<name>.yaml` directly in `directory`, sorted by name.

    Refused, with every problem of every file in one error: an invalid file, a file whose
    name is not `<site name>.yaml`, two files for one site, and (unless
    `include_templates`) a template whose host keys a provisioner has not filled in yet.
    Descriptive sites are returned; the caller decides what to do with them.
    """
    if not directory.is_dir():
        raise SiteConfigError(str(directory), [FieldProblem(
            "(directory)", "does not exist or is not a directory: create it, or point "
                           "GRIDGATE_SITE_CONFIGS_DIR at the directory of <site>.yaml files")])
    problems: list[FieldProblem] = []
    configs: dict[str, tuple[Path, SiteConfig]] = {}
    for path in sorted(p for p in directory.iterdir() if p.suffix in SUFFIXES and p.is_file()):
        try:
            config = load_site_config(path)
        except SiteConfigError as exc:
            problems.extend(FieldProblem(f"{path.name}: {p.field}", p.message)
                            for p in exc.problems)
            continue
        if path.stem != config.name:
            problems.append(FieldProblem(f"{path.name}: name", (
                f"the site is named {config.name!r} but its file is {path.name}: rename the "
                f"file to {config.name}.yaml or change `name`")))
        if config.name in configs:
            problems.append(FieldProblem(f"{path.name}: name", (
                f"site {config.name!r} is already defined in {configs[config.name][0].name}: "
                "keep one file per site")))
            continue
        if not include_templates and not config.descriptive and not config.is_complete:
            problems.append(FieldProblem(f"{path.name}: ssh.host_keys", (
                f"this is a template completed by `gridgate {config.provisioned_by} up`, "
                "which writes the finished copy to its state directory: point the gateway "
                "at that directory")))
        configs[config.name] = (path, config)
    if problems:
        raise SiteConfigError(str(directory), problems)
    return [config for _, (_, config) in sorted(configs.items())]


def _without_nulls(value: Any) -> Any:
    # After serialisation, so an UNLIMITED walltime (None inside, "UNLIMITED" out) stays.
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def site_config_data(config: SiteConfig) -> dict[str, Any]:
    """The config as plain JSON-able data, unset optional fields left out."""
    data: dict[str, Any] = _without_nulls(config.model_dump(mode="json"))
    return data


def dump_site_config(config: SiteConfig) -> str:
    """YAML that `parse_site_config` reads back to an equal config."""
    return yaml.safe_dump(site_config_data(config), sort_keys=False, allow_unicode=True,
                          width=100)


def _merge(base: Any, updates: Any) -> Any:
    if isinstance(base, dict) and isinstance(updates, Mapping):
        merged = dict(base)
        for key, value in updates.items():
            merged[key] = _merge(base.get(key), value) if key in base else value
        return merged
    return updates


def with_updates(config: SiteConfig, updates: Mapping[str, Any],
                 source: str = "<site config>") -> SiteConfig:
    """`config` with `updates` merged in (mappings merge, anything else replaces), validated.

    For provisioners, e.g. the testbed filling in a template:
    `with_updates(t, {"ssh": {"host": ip, "host_keys": [line]}})`.
    """
    merged = _merge(site_config_data(config), updates)
    return validate_site_config(merged, source)
