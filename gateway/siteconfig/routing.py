"""A site config's `routing` section: what the metascheduler needs to know of the site
beyond its shape. Labels it requires or refuses (data residency: a site outside a region
refuses jobs labelled for it), its relative speed and its transfer rate (for forecasts)."""

from __future__ import annotations

from typing import Annotated, Any, Self

from pydantic import AfterValidator, BeforeValidator, Field, model_validator

from gateway.scheduling.constraints import LabelRules
from gateway.siteconfig.fields import FieldIssues, Loc, Section
from rules.text import LABEL_KEY, ZONE, TextRule

# Label values a rule names: what job specs allow (any text up to 255), minus what would
# make a rule unreadable (line breaks, NUL).
_LABEL_VALUE = TextRule("label value", r"[^\r\n\x00]{1,255}",
                        "1-255 characters on one line")
# Where a site config gives no transfer rate: a conservative wide-area figure.
DEFAULT_TRANSFER_RATE_MB_S = 10.0


def _values(value: Any) -> Any:
    # One value may be written without a list: `residency: eu`.
    return [value] if isinstance(value, str) else value


LabelKey = Annotated[str, AfterValidator(LABEL_KEY.check)]
LabelValues = Annotated[list[Annotated[str, AfterValidator(_LABEL_VALUE.check)]],
                        BeforeValidator(_values), Field(max_length=64)]
LabelMap = Annotated[dict[LabelKey, LabelValues], Field(max_length=64)]


class SiteRouting(Section):
    """How routing treats the site (all optional)."""

    requires_labels: LabelMap = Field(default_factory=dict, description=(
        "Labels every job here must carry: key -> accepted values (a value or a list; an "
        "empty list accepts any value). Other jobs are routed elsewhere, and a job naming "
        "this site is refused."))
    refuses_labels: LabelMap = Field(default_factory=dict, description=(
        "Labels no job here may carry: key -> refused values (a value or a list; an empty "
        "list refuses any value), e.g. `residency: [eu]` on a site outside the EU."))
    zones: Annotated[list[Annotated[str, AfterValidator(ZONE.check)]], Field(
        max_length=64, description=(
            "Zones or regions the site is in (e.g. `eu`, `eu-north`), which a job's "
            "`routing.zones` may name instead of sites."))] = []
    speed: float = Field(default=1.0, gt=0, le=1000, description=(
        "How fast a job runs here relative to a site of speed 1.0 (2.0: in half the time)."))
    transfer_rate_mb_s: float = Field(
        default=DEFAULT_TRANSFER_RATE_MB_S, gt=0, le=1_000_000, description=(
            "MB/s the gateway expects moving files to and from the site until it has "
            "measured the path itself."))

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        issues: list[tuple[Loc, str]] = []
        for key, required in self.requires_labels.items():
            refused = self.refuses_labels.get(key)
            if refused is None:
                continue
            # An empty list refuses any value: then no job could ever come here.
            clash = (set(required) & set(refused)) if refused else {"any value"}
            if not clash:
                continue
            issues.append((("refuses_labels", key), (
                f"label {key!r} is both required and refused ({', '.join(sorted(clash))}): "
                "keep each value in one of the two")))
        for name, rules in (("requires_labels", self.requires_labels),
                            ("refuses_labels", self.refuses_labels)):
            for key, values in rules.items():
                if len(set(values)) != len(values):
                    issues.append(((name, key), "a value is listed twice: list each once"))
        if issues:
            raise FieldIssues(issues)
        return self

    def label_rules(self) -> LabelRules:
        """The rules as the constraints check them."""
        return LabelRules(
            requires={k: frozenset(v) for k, v in self.requires_labels.items()},
            refuses={k: frozenset(v) for k, v in self.refuses_labels.items()})
