"""MkDocs hook: the API and CLI references, generated at build time from the code itself
(the gateway's OpenAPI document and the Typer app), so that they cannot drift from it."""

from __future__ import annotations

import json
import tempfile
from typing import Any

import typer.main
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

METHODS = ("get", "post", "put", "patch", "delete")


def openapi_document() -> dict[str, Any]:
    """The document the gateway serves at /openapi.json (a throwaway database)."""
    from gateway.api.app import create_app
    from gateway.runtime import build_runtime
    from gateway.settings import Settings

    with tempfile.TemporaryDirectory() as data:
        settings = Settings.model_validate({
            "data_dir": data, "database_url": f"sqlite:///{data}/docs.db",
            "public_url": "https://gateway.example.org"})
        runtime = build_runtime(settings)
        try:
            document: dict[str, Any] = create_app(settings, runtime).openapi()
        finally:
            runtime.close()
    return document


def _cell(text: object) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _yes(flag: object) -> str:
    return "yes" if flag else "no"


def _schema_name(schema: dict[str, Any]) -> str:
    kinds = schema.get("anyOf") or schema.get("oneOf")
    if kinds:  # Optional[X] is anyOf [X, null]: say "X or null"
        return " or ".join(_schema_name(k) for k in kinds)
    ref = schema.get("$ref") or schema.get("items", {}).get("$ref")
    if ref:
        name = ref.rsplit("/", 1)[-1]
        return f"[`{name}`](#schema-{name.lower()})" + ("[]" if "items" in schema else "")
    return f"`{schema.get('type', 'object')}`"


def api_markdown(document: dict[str, Any]) -> str:
    """One section per tag, one entry per operation, then every schema's fields."""
    version = document["info"]["version"]
    out = ["# REST API reference", "",
           f"Generated from the gateway's OpenAPI document (version {version}), "
           "which every gateway also serves at `/openapi.json` and as Swagger UI at `/docs`. "
           "[Download it](openapi.json). Errors are RFC 9457 problem documents "
           "([API conventions](conventions.md)).", ""]
    by_tag: dict[str, list[tuple[str, str, dict[str, Any]]]] = {}
    for path, item in document["paths"].items():
        for method in METHODS:
            if method in item:
                op = item[method]
                by_tag.setdefault((op.get("tags") or ["other"])[0], []).append((method, path, op))
    for tag in sorted(by_tag):
        out += [f"## {tag}", ""]
        for method, path, op in by_tag[tag]:
            out += [f"### `{method.upper()} {path}`", "",
                    f"`{op['operationId']}`: {_cell(op.get('summary', ''))}", ""]
            if op.get("description"):
                out += [op["description"].strip(), ""]
            params = op.get("parameters", [])
            if params:
                out += ["| parameter | in | type | required | description |",
                        "|---|---|---|---|---|"]
                out += [f"| `{p['name']}` | {p['in']} | {_schema_name(p.get('schema', {}))} | "
                        f"{_yes(p.get('required'))} | {_cell(p.get('description', ''))} |"
                        for p in params]
                out.append("")
            body = op.get("requestBody", {}).get("content", {})
            for kind, content in body.items():
                out += [f"Request body (`{kind}`): {_schema_name(content.get('schema', {}))}", ""]
            out += ["| status | meaning |", "|---|---|"]
            out += [f"| {code} | {_cell(r.get('description', ''))} |"
                    for code, r in op.get("responses", {}).items()]
            out.append("")
    out += ["## Schemas", ""]
    for name, schema in sorted(document.get("components", {}).get("schemas", {}).items()):
        out += [f"### {name} {{#schema-{name.lower()}}}", ""]
        if schema.get("description"):
            out += [_cell(schema["description"]), ""]
        props = schema.get("properties", {})
        if props:
            required = set(schema.get("required", []))
            out += ["| field | type | required | description |", "|---|---|---|---|"]
            for field, spec in props.items():
                out.append(f"| `{field}` | {_schema_name(spec)} | {_yes(field in required)} | "
                           f"{_cell(spec.get('description', ''))} |")
            out.append("")
        elif "enum" in schema:
            out += ["One of: " + ", ".join(f"`{v}`" for v in schema["enum"]), ""]
    return "\n".join(out) + "\n"


def _commands(group: Any, path: str) -> list[tuple[str, Any]]:
    """(name, command) of every visible command under `group`, depth first. Typer carries
    its own copy of click, so commands are read by their attributes, not their classes."""
    found: list[tuple[str, Any]] = []
    for name in sorted(group.commands):
        command = group.commands[name]
        if command.hidden:
            continue
        where = f"{path} {name}"
        found.append((where, command))
        if hasattr(command, "commands"):
            found += _commands(command, where)
    return found


def _usage(command: Any) -> str:
    """`[OPTIONS] ARG...` as `--help` prints it (an argument's own metavar, else its name
    in capitals)."""
    pieces = ["[OPTIONS]"] if any(p.param_type_name == "option" for p in command.params) else []
    for param in command.params:
        if param.param_type_name == "argument":
            name = param.metavar or param.name.upper() + ("..." if param.nargs == -1 else "")
            pieces.append(name)
    return " ".join(pieces)


def cli_markdown() -> str:
    """Every command of `gridgate`: what it does, its usage, arguments and options."""
    from gateway.cli.main import app

    root = typer.main.get_command(app)
    out = ["# CLI reference", "",
           "Generated from the `gridgate` command itself; `gridgate COMMAND --help` prints "
           "the same. Every command that prints a table takes `--json` for scripts.", ""]
    for where, command in _commands(root, "gridgate"):
        out += [f"## `{where}`", ""]
        if command.help:
            out += [command.help.strip().replace("\b\n", ""), ""]
        usage = _usage(command)
        out += ["```", f"{where} {usage}".rstrip(), "```", ""]
        rows = []
        for param in command.params:
            option = param.param_type_name == "option"
            if option and param.hidden:
                continue
            names = ", ".join(f"`{o}`" for o in [*param.opts, *param.secondary_opts])
            help_text = getattr(param, "help", None) or ""
            default = param.default if option and param.show_default is not False else None
            shown = default not in (None, False, (), "") and not callable(default)
            extra = f" (default: `{default}`)" if shown else ""
            rows.append(f"| {names} | {_cell(help_text)}{extra} |")
        if rows:
            out += ["| argument or option | meaning |", "|---|---|", *rows, ""]
    return "\n".join(out) + "\n"


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Add the generated pages (they are never written into docs/)."""
    document = openapi_document()
    for uri, content in (("reference/api.md", api_markdown(document)),
                         ("reference/openapi.json", json.dumps(document, indent=1)),
                         ("reference/cli.md", cli_markdown())):
        files.append(File.generated(config, uri, content=content))
    return files

