"""Byte counts as people read them."""

from __future__ import annotations

_UNITS = ("KiB", "MiB", "GiB", "TiB")


def short_size(n: int) -> str:
    """'1.5 GiB', or '512 B' below a KiB: for tables."""
    value, unit = float(n), ""
    for name in _UNITS:
        if value < 1024:
            break
        value, unit = value / 1024, name
    return f"{n} B" if not unit else f"{value:.1f} {unit}"


def human_bytes(n: int) -> str:
    """'1.5 GiB (1610612736 bytes)': exact, and readable (for messages about limits)."""
    short = short_size(n)
    return f"{n} bytes" if short.endswith(" B") else f"{short} ({n} bytes)"
