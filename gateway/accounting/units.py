"""Service units. Stored and added as integer milli-SU, so sums are exact on every
database; shown as SU with three decimals."""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal

MILLI = 1000


def milli(su: float | str | Decimal) -> int:
    """SU as integer milli-SU (half-even at the thousandth)."""
    return int((Decimal(str(su)) * MILLI).quantize(Decimal(1), rounding=ROUND_HALF_EVEN))


def su(amount_milli: int) -> str:
    """milli-SU as SU text, e.g. 1234 -> '1.234'."""
    sign = "-" if amount_milli < 0 else ""
    whole, part = divmod(abs(amount_milli), MILLI)
    return f"{sign}{whole:,}.{part:03d}"
