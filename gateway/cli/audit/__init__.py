"""`gridgate audit`: check the tamper-evident audit log and the ledger (`verify`, auditors
and admins), and tell one job's story from request to charge, with the proof that each of
its entries is in the log's signed tree (`job`)."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.text import Text

from gateway.accounting.units import su
from gateway.cli import errors, render
from gateway.cli.audit import kept_heads, proofs
from gateway.cli.columns import Col, Grid
from gateway.cli.jobs import ids as job_ids
from gateway.cli.jobs.commands import JsonOpt
from gateway.cli.state import state
from gateway.schemas.audit import AuditVerifyOut, JobStoryOut, LedgerSealsOut

StoryJobArg = Annotated[str, typer.Argument(
    metavar="JOB", help="Job id, or any unique start of it, among the jobs whose story you "
    "may read (yours, your projects' as their PI; all for auditors and admins).",
    callback=job_ids.resolve_audited)]
audit_app = typer.Typer(help="Audit: the Merkle log, the ledger, one job's story.",
                        no_args_is_help=True)


HeadFileOpt = Annotated[Path | None, typer.Option(
    "--head", metavar="FILE", help="A tree head kept from before (the JSON of GET "
    "/api/v1/audit/tree-heads/...) to prove the log still begins with, instead of the "
    "newest one this command verified at this gateway.")]


@audit_app.command("verify")
def verify(ctx: typer.Context, head_file: HeadFileOpt = None, json_out: JsonOpt = False
           ) -> None:
    """Check the whole audit log (every entry hashed again into its Merkle tree, held
    against every tree head the gateway signed), the ledger against it (each
    transaction's legs against the seal of the entry that records it) and the ledger
    itself (each allocation's sums, each transaction balanced); name where the log first
    stops holding and the first transaction that differs. Then, here: the newest head's
    signature against the gateway's published keys, and the proof that the log still
    begins with the head this command verified last time (or --head FILE), which a
    gateway that rewrote its history cannot give. Exit 1 when anything is wrong.
    Auditors and admins only."""
    cli = state(ctx)
    kept = (json.loads(head_file.read_text()) if head_file is not None
            else kept_heads.load(cli.gateway))
    with cli.client() as client:
        report = client.audit_verify()
        head = report["head"]
        fault = None
        if head is not None:
            fault = proofs.signature_fault(head, client.published_keys())
            if fault is None and kept is not None:
                proof = (client.audit_consistency(kept["size"], head["size"])
                         if 0 < kept["size"] < head["size"] else None)
                fault = proofs.consistency_fault(kept, head, proof)
    ok = report["ok"] and fault is None
    if json_out:
        render.print_json({**report, "ok": ok, "kept_head": kept, "kept_head_fault": fault})
    else:
        _print_verdict(report)
        if fault is not None:
            render.stdout_console().print(Text(f"HISTORY REWRITTEN: {fault}", style="red"),
                                          soft_wrap=True)
        elif kept is not None and head is not None:
            render.stdout_console().print(
                f"The log still begins with the tree of {kept['size']} entries verified "
                f"before (signed {kept['at']}): RFC 9162 consistency proof checked here.",
                soft_wrap=True)
    if ok and head is not None and head_file is None:
        kept_heads.keep(cli.gateway, head)
    if not ok:
        raise typer.Exit(errors.FAILURE)


def _print_verdict(report: AuditVerifyOut) -> None:
    console = render.stdout_console()
    broken = report["broken"]
    head = report["head"]
    console.print(f"Audit log: {report['events']} entr{'y' if report['events'] == 1 else 'ies'}"
                  " verified"
                  + (f" against every signed tree head; the newest covers {head['size']} "
                     f"(root {head['root'][:16]}..., signed {render.when(head['at'])})"
                     if head else ", no signed tree head yet")
                  + f" (checked {render.when(report['checked_at'])}).", soft_wrap=True)
    if waiting := report["pending"]:
        console.print(f"{waiting} entr{'y waits' if waiting == 1 else 'ies wait'} for the "
                      f"sequencer (oldest {render.when(report['oldest_pending_at'])}): a "
                      "signed head covers them once a worker takes them in.", soft_wrap=True)
    if broken is None:
        console.print(Text("Log intact.", style="green"))
    else:
        where = f"entry {broken['event_id']}" if broken["event_id"] is not None else "the tree"
        console.print(Text(f"BROKEN at {where} ({broken['fault']}): {broken['detail']}",
                           style="red"), soft_wrap=True)
    console.print(f"Ledger: {report['allocations']} allocation(s) checked.")
    if not report["ledger_problems"]:
        console.print(Text("Ledger balanced; every allocation's sums match it.", style="green"))
    for problem in report["ledger_problems"]:
        console.print(Text(problem, style="red"), soft_wrap=True)
    _print_seals(console, report["ledger_seals"])


def _print_seals(console: Console, seals: LedgerSealsOut) -> None:
    console.print(f"Ledger bound to the log: {seals['bound']} transaction(s) match the seal of "
                  "the entry that records them.", soft_wrap=True)
    if seals["unbound"]:
        console.print(f"{seals['unbound']} transaction(s) were recorded before the ledger was "
                      "bound to the log: unbound, checked against the allocations' sums "
                      "only.", soft_wrap=True)
    first = seals["first"]
    if first is not None:
        link = f"entry {first['event_id']}" if first["event_id"] is not None else "no entry"
        console.print(Text(
            f"LEDGER DIFFERS at transaction {first['txn']} ({first['kind']}, "
            f"{render.when(first['at'])}, {link}): {first['detail']}", style="red"),
            soft_wrap=True)
        if seals["differ"] > 1:
            console.print(Text(f"{seals['differ']} transaction(s) differ in all.",
                               style="red"))


@audit_app.command("job")
def job(ctx: typer.Context, job_id: StoryJobArg, json_out: JsonOpt = False) -> None:
    """One job's story from request to charge: who asked and as whom, where it was routed
    and why, every attempt, the lien, the site's usage record and the charge, in time
    order; then each of its audit log entries proven, by this command, to be in the tree
    head the gateway signed (exit 1 when a proof fails). For the job's owner, its
    project's PI, auditors and admins."""
    with state(ctx).client() as client:
        story = client.audit_job(job_id)
    if json_out:
        render.print_json(story)
        return
    console = render.stdout_console()
    owner = story["owner"]
    console.print(f"Job {story['job_id']} ({story['name']}), project {story['project']}, "
                  f"now {story['state']}", soft_wrap=True)
    console.print(f"Owner {owner['username'] or '-'} (issuer {owner['issuer']}, subject "
                  f"{owner['subject']}); requested by {story['requested_by']}", soft_wrap=True)
    console.print(story_table(story))
    with state(ctx).client() as client:
        keys = client.published_keys()
    failures = proofs.story_failures(story, keys)
    console.print(_proof_summary(story), soft_wrap=True)
    for failure in failures:
        console.print(Text(f"PROOF FAILS: {failure}", style="red"), soft_wrap=True)
    if failures:
        raise typer.Exit(errors.FAILURE)


def _proof_summary(story: JobStoryOut) -> str:
    head = story["tree_head"]
    entries = {e["id"]: e["leaf"] for e in story["audit"]}
    proven = sum(leaf is not None for leaf in entries.values())
    said = f"Audit log: {len(entries)} entr{'y' if len(entries) == 1 else 'ies'} about this job"
    if head is not None and proven:
        said += (f"; {proven} proven, here, to be in the tree head of {head['size']} entries "
                 f"the gateway signed {render.when(head['at'])} (root {head['root'][:16]}...)")
    if waiting := len(entries) - proven:
        said += (f"; {waiting} not in a signed tree head yet (a worker takes new entries in "
                 "every few seconds)")
    return said + "."


def story_table(story: JobStoryOut) -> Grid:
    """Every step of the story, oldest first: AT, WHAT, DETAIL."""
    steps: list[tuple[datetime, str, str]] = []
    for e in story["events"]:
        steps.append((e["at"], f"state {e['to_state']}",
                      f"{e['from_state'] or '-'} -> {e['to_state']} by {e['actor']}"
                      + (f": {e['reason']}" if e["reason"] else "")))
    for p in story["placements"]:
        steps.append((p["decided_at"], "routed",
                      f"to {', '.join(p['chosen']) or 'nowhere'} ({p['policy']}): {p['why']}"))
    for a in story["attempts"]:
        where = f"attempt {a['number']} at {a['site']} (native id {a['native_id'] or '-'})"
        for moment, what in ((a["submitted_at"], "submitted"), (a["started_at"], "started"),
                             (a["ended_at"], f"ended {a['state']}")):
            if moment is not None:
                steps.append((moment, what, where))
    for lien in story["liens"]:
        steps.append((lien["created_at"], "lien held",
                      f"{su(lien['amount_milli'])} SU from allocation {lien['allocation_id']}"
                      f" at {lien['site'] or 'any site'} (now {lien['status']})"))
    for u in story["usage"]:
        charged = "-" if u["charged_milli"] is None else f"{su(u['charged_milli'])} SU"
        steps.append((u["received_at"], "usage record",
                      f"{u['site']} {u['native_id']} run {u['run']} ({u['source']}): "
                      f"{u['state']}, {u['elapsed']} s on {u['cores']} core(s), "
                      f"charged {charged}" + (" (estimated)" if u["estimated"] else "")
                      + (f"; {u['rule']}" if u["rule"] else "")))
    # Each transaction once: its leg into an account (the other leg is the way out).
    for leg in (leg for leg in story["ledger"] if leg["amount_milli"] > 0):
        steps.append((leg["at"], f"ledger {leg['kind']}",
                      f"{su(leg['amount_milli'])} SU into {leg['account']} of allocation "
                      f"{leg['allocation_id']} by {leg['actor']}"
                      + (f": {leg['reason']}" if leg["reason"] else "")))
    table = Grid([Col("AT"), Col("WHAT"), Col("DETAIL", text=True, wrap=True)])
    for moment, what, detail in sorted(steps, key=lambda step: step[0]):
        table.add_row(render.when(moment), what, Text(detail))
    return table
