"""`gridgate admin site unban NAME`: an admin lifts a black-hole ban on the gateway host,
and the audit chain records it (issue 25)."""

from __future__ import annotations

from datetime import timedelta

from adapters.reasons import Reason
from gateway.auth.accounts import create_local_user
from gateway.db.base import utcnow
from gateway.db.engine import transaction
from gateway.db.models import Attempt, Job, Project
from gateway.domain.states import AttemptState
from gateway.repositories.money import audit
from tests.cli.helpers import Cli


def test_unban_lifts_the_ban_and_the_chain_says_who(cli: Cli) -> None:
    runtime = cli.gateway.runtime
    refused = cli("admin", "site", "unban", "local", code=None)
    assert refused.exit_code != 0
    assert "Site 'local' is not out of routing; there is no ban to lift." in refused.stderr
    missing = cli("admin", "site", "unban", "nowhere", code=None)
    assert missing.exit_code == 6 and "No site named 'nowhere'" in missing.stderr
    # Three users' jobs ended at 'local' on a node failure, the last a minute ago.
    now = utcnow()
    with transaction(runtime.sessions) as session:
        project = Project(name="holes")
        session.add(project)
        ann, bob, cat = (create_local_user(session, name, "correct horse battery",
                                           ["researcher"]).id for name in ("ann", "bob", "cat"))
        session.flush()
        for i, owner in enumerate((ann, bob, cat)):
            ended = now - timedelta(seconds=60 * (3 - i))
            session.add(Job(id=f"00000000-0000-4000-8000-{i:012d}", owner_id=owner,
                            project_id=project.id, name="hole", state="FAILED",
                            spec={"name": "hole", "executable": "/bin/true"}))
            session.flush()
            session.add(Attempt(job_id=f"00000000-0000-4000-8000-{i:012d}", number=1,
                                site_name="local", tag=f"hole-{i}", state=AttemptState.FAILED,
                                reason=str(Reason.NODE_FAIL), workdir="/nowhere",
                                started_at=ended, ended_at=ended))
    sites = cli.json("sites")["items"]
    assert sites[0]["routing_ban"].startswith("3 jobs of 3 users failed in a row")
    done = cli("admin", "site", "unban", "local")
    assert "Lifted the ban on site local (3 jobs of 3 users failed in a row" in done.stderr
    assert cli.json("sites")["items"][0]["routing_ban"] is None
    with runtime.engine.connect() as conn:
        (link,) = audit.of_subject(conn, "site:local")
    assert link.kind == "site.unban" and link.actor.endswith("(gridgate admin site unban)")
    assert link.data["ban"].startswith("3 jobs of 3 users failed in a row with signs of the "
                                       "site (NODE_FAIL); out of routing until ")
