"""`BatchAdapter.usage` over a replaying transport: which commands it runs for usage records,
in which order, and what it returns (fixtures as in test_usage_<scheduler>.py)."""

from __future__ import annotations

import pytest

from adapters.base import Adapter
from adapters.batch.adapter import BatchAdapter
from adapters.errors import SiteUnavailable
from adapters.lsf import LsfDialect
from adapters.pbs import PbsDialect
from adapters.reasons import Reason
from adapters.sge import SgeDialect
from adapters.slurm import SlurmDialect
from adapters.slurm.usage import FIELDS
from tests.schedulers.recorded import ReplayTransport, load


def sacct(*ids: str) -> tuple[str, ...]:
    return ("env", "SLURM_TIME_FORMAT=%s", "sacct", "--parsable2", "--noheader",
            "--allocations", "--allusers", "--duplicates", f"--jobs={','.join(ids)}",
            f"--format={FIELDS}")


def test_slurm_runs_in_the_order_asked() -> None:
    t = ReplayTransport()
    t.expect(sacct("6", "1", "4"), load("slurm", "real_sacct_usage.txt"))
    adapter: Adapter = BatchAdapter(t, SlurmDialect())
    assert adapter.capabilities.usage
    records = adapter.usage(["6", "1", "6", "not-an-id", "4"])
    t.assert_done()
    # The answer holds more jobs than asked (the recording has seven): only those asked.
    assert [(r.native_id, r.run) for r in records] == [("6", 0), ("6", 1), ("1", 0), ("4", 0)]
    assert records[0].reason == Reason.REQUEUED


def test_slurm_accounting_down_is_a_site_problem() -> None:
    t = ReplayTransport()
    t.expect(sacct("5"), load("slurm", "real_sacct_disabled.txt"))
    with pytest.raises(SiteUnavailable):
        BatchAdapter(t, SlurmDialect()).usage(["5"])
    t.assert_done()


def test_no_valid_id_runs_nothing() -> None:
    t = ReplayTransport()
    assert BatchAdapter(t, SlurmDialect()).usage(["x", "1 2"]) == []
    assert BatchAdapter(t, SgeDialect()).usage([]) == []
    t.assert_done()


def test_grid_engine_one_qacct_per_job() -> None:
    t = ReplayTransport()
    t.expect(("qacct", "-m", "-j", "6"), load("sge", "real_qacct_usage_requeued.txt"))
    t.expect(("qacct", "-m", "-j", "4"), load("sge", "real_qacct_usage_pending_deleted.txt"))
    t.expect(("qacct", "-m", "-j", "3"), load("sge", "real_qacct_usage_2core.txt"))
    records = BatchAdapter(t, SgeDialect()).usage(["6", "4", "3"])
    t.assert_done()
    assert [(r.native_id, r.run, r.cores) for r in records] == [("6", 0, 1), ("6", 1, 1),
                                                                ("3", 0, 2)]


def test_pbs_and_lsf_read_usage_only_from_a_named_log_directory() -> None:
    t = ReplayTransport()
    for dialect in (PbsDialect(), LsfDialect()):
        adapter = BatchAdapter(t, dialect)
        assert not adapter.capabilities.usage
        assert adapter.usage(["201.pbsserver", "301"]) == []
    t.assert_done()


def test_pbs_usage_from_the_accounting_log() -> None:
    t = ReplayTransport()
    t.expect(("grep", "-h", "-r", "-F", "-e", ";R;203.pbsserver;", "-e", ";E;203.pbsserver;",
              "-e", ";D;203.pbsserver;", "--", "/var/spool/pbs/server_priv/accounting"),
             load("pbs", "accounting_usage.txt"))
    adapter = BatchAdapter(t, PbsDialect(accounting_dir="/var/spool/pbs/server_priv/accounting"))
    assert adapter.capabilities.usage
    records = adapter.usage(["203.pbsserver"])
    t.assert_done()
    assert [(r.native_id, r.run, r.elapsed) for r in records] == [
        ("203.pbsserver", 0, 120), ("203.pbsserver", 1, 300)]


def test_lsf_usage_from_lsb_acct() -> None:
    t = ReplayTransport()
    t.expect(("grep", "-h", "-r", "-E", "--include=lsb.acct*", "-e",
              '^"JOB_FINISH" "[^"]*" [0-9]+ (306) ', "--", "/lsf/logdir"),
             load("lsf", "lsb_acct_usage.txt"))
    records = BatchAdapter(t, LsfDialect(accounting_dir="/lsf/logdir")).usage(["306"])
    t.assert_done()
    assert [(r.native_id, r.run, r.elapsed) for r in records] == [
        ("306", 0, 120), ("306", 1, 300)]
