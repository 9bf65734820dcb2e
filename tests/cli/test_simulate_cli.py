"""`gridgate simulate`: a host command that needs no gateway, on the hand-written logs of
tests/scheduling/data (golden schedules in tests/scheduling/test_federation.py)."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner, Result

from gateway.cli.main import app

DATA = Path(__file__).resolve().parents[1] / "scheduling" / "data"
FEDERATION = [str(DATA / f"federation_{site}.swf") for site in "abc"]


def gridgate(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def traces(paths: list[str]) -> list[str]:
    return [arg for path in paths for arg in ("--trace", path)]


def test_simulate_json_gives_the_golden_figures() -> None:
    result = gridgate("simulate", *traces(FEDERATION), "--policy", "own", "--json")
    assert result.exit_code == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["policy"] == "own" and summary["window_days"] == 180
    # Waits 0, 90, 130, 70 (A); 0, 195, 185 (B); 0 (C), worked out in test_federation.py.
    assert summary["overall"]["mean_wait_s"] == 83.75
    assert summary["origins"]["federation_b"]["mean_wait_s"] == round(380 / 3, 2)
    assert summary["skipped"] == {"federation_a": 0, "federation_b": 0, "federation_c": 1}


def test_simulate_tables_name_every_site_and_policy() -> None:
    result = gridgate("simulate", *traces(FEDERATION), "--policy", "fewest-queued",
                      "--window-days", "0")
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "Policy fewest-queued (whole logs)" in out
    for name in ("federation_a", "federation_b", "federation_c"):
        assert out.count(name) == 2  # own-jobs table and what-each-site-ran table
    assert "25.0%" in out  # A4 moved to C: a quarter of A's jobs ran elsewhere


def test_window_days_cuts_each_log() -> None:
    # Only jobs submitted in the first 20 s: A1, A2, B1, B2, C1.
    result = gridgate("simulate", *traces(FEDERATION), "--policy", "own", "--json",
                      "--window-days", str(20 / 86400))
    assert json.loads(result.stdout)["overall"]["jobs"] == 5


def test_evaluate_predictions_scores_every_method(tmp_path: Path) -> None:
    packed = tmp_path / "synthetic.swf.gz"
    packed.write_bytes(gzip.compress((DATA / "synthetic.swf").read_bytes()))
    result = gridgate("simulate", "--evaluate-predictions", "--trace", str(packed), "--json")
    assert result.exit_code == 0, result.stderr
    (log,) = json.loads(result.stdout)["logs"]
    assert (log["log"], log["processors"], log["window_days"]) == ("synthetic", 64, None)
    methods = log["methods"]
    # Production's forecast (its modes and what it tells a person) beside every baseline.
    assert list(methods) == ["combined", "history", "projection", "likely", "zero_wait",
                             "easy_walltime", "rolling", "rolling_conformal", "if_late",
                             "class_if_late", "rolling_if_late", "hindsight_best_point"]
    # The wait if late speaks for the jobs that did not start within 10 min: scored on them.
    late = methods["combined"]["waited_over_10min"]["jobs"]
    assert methods["if_late"]["jobs"] == methods["rolling_if_late"]["jobs"] == late > 0
    assert methods["class_if_late"]["jobs"] == late
    assert all(scores["jobs"] == 12 for name, scores in methods.items()
               if name not in ("if_late", "class_if_late", "rolling_if_late"))
    # The forecaster and the projection predict every job; the rolling median needs
    # earlier waits; "it starts now" gives no bound.
    assert methods["combined"]["predicted"] == methods["easy_walltime"]["predicted"] == 12
    assert methods["rolling"]["predicted"] < 12
    assert "under_bound" not in methods["zero_wait"]
    assert methods["zero_wait"]["waited_over_10min"]["within_2x"] == 0.0
    table = gridgate("simulate", "--evaluate-predictions", "--trace", str(packed)).stdout
    assert "Wait predictions on synthetic (64 processors)" in table
    assert "rolling_conformal" in table


def test_a_missing_log_is_a_usage_error(tmp_path: Path) -> None:
    result = gridgate("simulate", "--trace", str(tmp_path / "none.swf"))
    assert result.exit_code == 2
    # The message sits in a box wrapped at 80 columns, which may break the (long) path
    # anywhere, even inside a word: compare with every space and box edge taken out.
    said = "".join(result.stderr.replace("│", " ").split())
    assert f"'{tmp_path / 'none.swf'}'doesnotexist" in said


def test_a_bad_line_is_named_and_fails(tmp_path: Path) -> None:
    bad = tmp_path / "bad.swf"
    bad.write_text("; MaxProcs: 4\n1 0 0 10 4 -1 -1 4 60 -1 1 1 1 1 1 -1 -1 -1\n1 0 x\n")
    result = gridgate("simulate", "--trace", str(bad))
    assert result.exit_code == 1
    assert "error: bad.swf, line 3: an SWF job line has 18 fields, this one has 3" in (
        result.stderr)


def test_a_truncated_gzip_log_fails_with_its_name(tmp_path: Path) -> None:
    whole = gzip.compress((DATA / "synthetic.swf").read_bytes())
    cut = tmp_path / "cut.swf.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    result = gridgate("simulate", "--trace", str(cut), "--evaluate-predictions")
    assert result.exit_code == 1
    assert result.stderr.startswith("error: cut.swf.gz: cannot read the log:")


def test_starting_the_cli_does_not_load_the_simulator() -> None:
    code = "import sys, gateway.cli.main; print([m for m in sys.modules if 'scheduling' in m])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


def test_fastest_is_the_default_policy() -> None:
    # The golden `fastest` schedule of test_federation.py: A's jobs wait 0, 90, 130, 70,
    # all at home (C, where B's job went, does not welcome A's as guests that queue).
    summary = json.loads(gridgate("simulate", *traces(FEDERATION), "--json").stdout)
    assert (summary["policy"], summary["forecast_mode"]) == ("fastest", "combined")
    assert summary["origins"]["federation_a"]["mean_wait_s"] == 72.5
    assert summary["origins"]["federation_a"]["ran_elsewhere"] == 0.0
    assert summary["origins"]["federation_b"]["ran_elsewhere"] == 0.3333  # B2, at C
    # With no wait history yet, every forecast mode gives the same schedule.
    projection = gridgate("simulate", *traces(FEDERATION), "--json", "--forecast-mode",
                          "projection")
    assert json.loads(projection.stdout)["origins"] == summary["origins"]


def test_evaluate_predictions_refuses_an_unsorted_log(tmp_path: Path) -> None:
    # As `simulate` does: a walk of an unsorted log would predict with the future.
    path = tmp_path / "unsorted.swf"
    path.write_text("; MaxProcs: 8\n1 50 0 10 4 -1 -1 4 60 -1 1 1 1 1 1 -1 -1 -1\n"
                    "2 40 0 10 4 -1 -1 4 60 -1 1 1 1 1 1 -1 -1 -1\n")
    result = gridgate("simulate", "--evaluate-predictions", "--trace", str(path))
    assert result.exit_code == 1
    assert "unsorted.swf: job 2 is out of submit order" in result.stderr


def test_evaluate_predictions_refuses_a_log_without_waits(tmp_path: Path) -> None:
    # NASA's iPSC/860 log records no waits: an empty report would read as a scored one.
    path = tmp_path / "nowaits.swf"
    path.write_text("; MaxProcs: 8\n1 0 -1 10 4 -1 -1 -1 -1 -1 -1 1 1 -1 -1 -1 -1 -1\n"
                    "2 40 -1 10 4 -1 -1 -1 -1 -1 -1 1 1 -1 -1 -1 -1 -1\n")
    result = gridgate("simulate", "--evaluate-predictions", "--trace", str(path))
    assert result.exit_code == 1
    assert "nowaits.swf: no job in it logs its wait" in result.stderr
    replayed = gridgate("simulate", "--trace", str(path), "--policy", "own", "--json")
    assert replayed.exit_code == 0 and json.loads(replayed.stdout)["overall"]["jobs"] == 2
