"""The one CSV writer (gateway/api/csv_export.py): text never starts a spreadsheet formula
(OWASP's CSV injection rule: a leading single quote), numbers the gateway writes stay
numbers, negative ones included."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from gateway.api.csv_export import csv_cell, csv_response


@pytest.mark.parametrize(("value", "cell"), [
    ("=1+1", "'=1+1"), ("+1", "'+1"), ("-1", "'-1"), ("@SUM(A1)", "'@SUM(A1)"),
    ("\t=1", "'\t=1"), ("\r=1", "'\r=1"),
    ("plain", "plain"), ("a=b", "a=b"), ("", ""), ("'quoted", "'quoted"),
    (-5, -5), (-1.5, -1.5), (1e-05, 1e-05), (Decimal("-2.5"), Decimal("-2.5")), (0, 0),
    (float("-inf"), "'-inf"), (float("nan"), "nan"), (None, ""),
    (datetime(2026, 11, 25, 12, tzinfo=UTC), "2026-11-25T12:00:00+00:00"),
])
def test_text_is_neutralised_and_numbers_stay_numbers(value: object, cell: object) -> None:
    assert csv_cell(value) == cell


def test_a_cell_stays_one_cell_whatever_it_holds() -> None:
    rows = [{"name": 'x,=1+1\n"=2', "charge_su": -3.5, "note": None}]
    text = csv_response(rows, "usage").body.decode()
    assert list(csv.DictReader(io.StringIO(text))) == [
        {"name": 'x,=1+1\n"=2', "charge_su": "-3.5", "note": ""}]
