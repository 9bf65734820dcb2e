"""The job spec's `routing.policy`, read from the routing policy registry
(gateway.scheduling.policies.registry) whenever a spec is validated or its schema
generated: the names it accepts, the default, the policy of a job naming its site, the
deadline each policy needs or refuses, and how the JSON Schema says all that. A policy
registered there is a word of the job spec with no edit here.

The domain's only door to the registry (the layers contract in pyproject.toml lets this
module, and no other of gateway.domain, import gateway.scheduling.policies: pure, it
imports no layer)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import PydanticCustomError, core_schema

from gateway.scheduling.policies import registry
from gateway.scheduling.policies.base import DeadlineRule


def _either(words: list[str], last: str = "or") -> str:
    *first, tail = words
    return f"{', '.join(first)} {last} {tail}" if first else tail


class PolicyName(str):
    """A registered routing policy's name."""

    @classmethod
    def check(cls, value: Any) -> PolicyName:
        """`value` when it names a registered policy; pydantic's own enum error else
        (the message a client always had)."""
        names = registry.names()
        if isinstance(value, str) and value in names:
            return cls(value)
        raise PydanticCustomError("enum", "Input should be {expected}",
                                  {"expected": _either([repr(n) for n in names])})

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler
                                     ) -> core_schema.CoreSchema:
        # "RoutingPolicy": the schema's name for the field's type since it was an enum.
        return core_schema.no_info_plain_validator_function(
            cls.check, ref="RoutingPolicy", serialization=core_schema.to_string_ser_schema())

    @classmethod
    def __get_pydantic_json_schema__(cls, schema: core_schema.CoreSchema,
                                     handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        return {"type": "string", "enum": list(registry.names()), "title": "RoutingPolicy",
                "description": "How a `site: auto` job's site is chosen "
                               "(gateway.scheduling.ranking)."}


DEFAULT = registry.DEFAULT


def pinned_policy() -> str:
    """The policy of a job that names its site."""
    return registry.pinning().name


def pins(policy: str) -> bool:
    """Whether `policy` is the one of a job naming its site."""
    return registry.policy(policy).pins


def policy_description() -> str:
    """`routing.policy`'s description: each policy's summary."""
    return "; ".join(f"{p.name}{' (default)' if p.name == registry.DEFAULT else ''}: "
                     f"{p.summary}" for p in registry.REGISTERED) + "."


def deadline_description() -> str:
    """`routing.deadline`'s description: which policies need it, which take it."""
    uses = []
    if required := registry.deadline_names(DeadlineRule.REQUIRED):
        uses.append(f"required by the {_either(list(required))} policy")
    if optional := registry.deadline_names(DeadlineRule.OPTIONAL):
        uses.append(f"optional under {_either(list(optional))}")
    return "RFC 3339 time the job should finish by" + "".join(
        f"{'; ' if i == 0 else ', '}{use}" for i, use in enumerate(uses)) + "."


def deadline_rule_problem(policy: str, deadline: datetime | None) -> str | None:
    """Why `policy` cannot go with the deadline given (or its absence), or None."""
    rule = registry.policy(policy).deadline_rule
    if rule is DeadlineRule.REQUIRED and deadline is None:
        return (f"the {policy} policy needs 'deadline': the RFC 3339 time the job should "
                "finish by")
    if rule is DeadlineRule.NONE and deadline is not None:
        first, *others = (f"`policy: {name}`" for name in _taking_deadline())
        alternatives = f" (or {_either(others)})" if others else ""
        return (f"'deadline' goes with {first}{alternatives}; set the policy or drop the "
                "deadline")
    return None


def _taking_deadline() -> list[str]:
    return [*registry.deadline_names(DeadlineRule.REQUIRED),
            *registry.deadline_names(DeadlineRule.OPTIONAL)]


def routing_schema(schema: dict[str, Any]) -> None:
    """The `Routing` schema as the registry has it now: each policy needing a deadline
    requires one, a deadline requires a policy taking one, and both descriptions."""
    rules: list[dict[str, Any]] = [
        {"if": {"required": ["policy"], "properties": {"policy": {"const": name}}},
         "then": {"required": ["deadline"], "properties": {"deadline": {"type": "string"}}}}
        for name in registry.deadline_names(DeadlineRule.REQUIRED)]
    rules.append(
        {"if": {"required": ["deadline"], "properties": {"deadline": {"type": "string"}}},
         "then": {"required": ["policy"], "properties": {"policy": {"enum": _taking_deadline()}}}})
    schema["allOf"] = rules
    schema["properties"]["policy"]["description"] = policy_description()
    schema["properties"]["deadline"]["description"] = deadline_description()
