"""The researcher portal in Debian's Chromium, against a real `gridgate serve` whose worker
runs jobs at the local site: a person signs in, submits the MPI ping-pong from the form
with its program uploaded (one upload's connection dropped and resumed), watches the job
reach COMPLETED without a reload, reads its log, downloads its output and checks its
sha256; the jobs list follows jobs live; a job is cancelled from its page; another user's
job is a 404 page; the form's error for a bad spec is the CLI's, word for word; the
session's cookie works for the API only with its CSRF token and dies with sign-out.
Screenshots are kept in each test's tmp dir (the path is printed).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from playwright.sync_api import Browser, Page, Route, expect
from sqlalchemy import select, update

from gateway.auth.accounts import create_local_user
from gateway.db.engine import make_engine, make_session_factory, transaction
from gateway.db.models import Attempt, Site
from gateway.settings import Settings
from tests.browser.conftest import PASSWORD, USERNAME, Gateway, running_gateway
from tests.browser.test_device_login_page import watch_console
from tests.waiting_jobs import let_go, waits

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "pingpong"
CHUNK = 1024 * 1024  # the portal's upload chunk (static/uploads.js)
LONG = 180_000  # ms: a job through the worker on a loaded 2-core machine


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """A gateway whose worker runs jobs at the local site; alice and bob are users."""
    root = tmp_path_factory.mktemp("portal")
    for gw in running_gateway(root, worker=True):
        engine = make_engine(_settings(gw).resolved_database_url)
        try:
            with transaction(make_session_factory(engine)) as session:
                create_local_user(session, "bob", PASSWORD)
        finally:
            engine.dispose()
        yield gw


def _settings(gateway: Gateway) -> Settings:
    return Settings(data_dir=Path(gateway.env["GRIDGATE_DATA_DIR"]))


def _sign_in(page: Page, gateway: Gateway, path: str = "/portal/jobs",
             username: str = USERNAME) -> None:
    page.goto(f"{gateway.url}{path}")
    expect(page).to_have_url(f"{gateway.url}/portal/login?next={path}")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(f"{gateway.url}{path}")


def _token(page: Page) -> str:
    [cookie] = [c for c in page.context.cookies() if c["name"] == "gridgate_portal"]
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["path"] == "/"
    return cookie["value"]


def _api(gateway: Gateway, page: Page, method: str, path: str, **kwargs: Any) -> httpx.Response:
    """The API, as the page's signed-in person (the session's token as a bearer token)."""
    return httpx.request(method, f"{gateway.url}/api/v1{path}", timeout=30,
                         headers={"Authorization": f"Bearer {_token(page)}"}, **kwargs)


def _waiting_job(gateway: Gateway, page: Page, name: str) -> str:
    spec = {"name": name, "executable": "/bin/sh", "args": ["-c", waits("echo let go")],
            "site": "local"}
    r = _api(gateway, page, "POST", "/jobs", json=spec)
    assert r.status_code == 202, r.text
    return str(r.json()["id"])


def _let_go(gateway: Gateway, job_id: str) -> None:
    """Let a waiting job end (once the worker has made its directory)."""
    engine = make_engine(_settings(gateway).resolved_database_url)
    try:
        with make_session_factory(engine)() as session:
            workdirs = session.scalars(select(Attempt.workdir)
                                       .where(Attempt.job_id == job_id)).all()
    finally:
        engine.dispose()
    assert any(let_go(w) for w in workdirs if w), workdirs


DOCS_SHOTS = Path(__file__).resolve().parents[2] / "docs" / "researchers" / "portal"


def _shot(page: Page, tmp_path: Path, name: str) -> None:
    """A screenshot in the test's tmp dir; with GRIDGATE_DOCS_SCREENSHOTS=1 also beside
    the documentation's page on the portal (how its images are made)."""
    path = tmp_path / name
    page.screenshot(path=path, full_page=True)
    print(f"screenshot: {path}")
    if os.environ.get("GRIDGATE_DOCS_SCREENSHOTS") == "1":
        DOCS_SHOTS.mkdir(exist_ok=True)
        (DOCS_SHOTS / name).write_bytes(path.read_bytes())


def _open_group(page: Page, name: str) -> None:
    page.locator(f"details[data-field='{name}'] > summary").first.click()


def test_a_researcher_submits_watches_reads_and_fetches(gateway: Gateway, page: Page,
                                                      tmp_path: Path) -> None:
    problems = watch_console(page)
    _sign_in(page, gateway, "/portal/submit")
    expect(page.get_by_label("Name (required)")).to_be_visible()
    page.get_by_label("Name (required)").fill("pingpong-portal")
    page.get_by_label("Executable", exact=True).fill("python3")
    page.get_by_label("Args", exact=True).fill("pingpong.py\n--max-bytes\n4096\n--target-seconds\n"
                                   "0.002\n--batches\n2\n--out\nresults.jsonl")
    page.get_by_label("Outputs", exact=True).fill("results.jsonl")
    _open_group(page, "resources")
    page.get_by_label("Ranks", exact=True).fill("2")
    page.get_by_label("Walltime").fill("00:10:00")
    _open_group(page, "mpi")
    page.get_by_label("Launcher").select_option("mpirun")
    page.get_by_label("Flavor").fill("mpich")
    # Two inputs: the program, and a file big enough to take several chunks, whose
    # second chunk's connection is dropped once: the upload resumes where it stopped.
    _open_group(page, "inputs")
    data = tmp_path / "data.bin"
    data.write_bytes(os.urandom(2 * CHUNK + 12345))
    add = page.get_by_role("button", name="Add input")
    for path in (EXAMPLE / "pingpong.py", data):
        add.click()
        page.locator("details[data-field='inputs'] input[type=file]").last.set_input_files(path)
    dropped: list[str] = []

    def drop_once(route: Route) -> None:
        if (route.request.method == "PUT" and not dropped
                and route.request.headers.get("content-range", "").startswith(f"bytes {CHUNK}-")):
            dropped.append(route.request.headers["content-range"])
            route.abort("connectionreset")
        else:
            route.continue_()

    page.route("**/api/v1/uploads/*", drop_once)
    page.get_by_role("button", name="Estimate").click()
    expect(page.locator("#estimate-table tr[data-site='local']")).to_contain_text("local")
    expect(page.locator("#estimate-why")).not_to_be_empty()
    _shot(page, tmp_path, "portal-submit.png")

    page.get_by_role("button", name="Submit").click()
    page.wait_for_url(f"{gateway.url}/portal/jobs/*", timeout=LONG)
    assert dropped, "the second chunk's connection was dropped once"
    job_id = page.url.rsplit("/", 1)[1]
    job = _api(gateway, page, "GET", f"/jobs/{job_id}").json()
    sources = [i["source"] for i in job["spec"]["inputs"]]
    assert [i["dest"] for i in job["spec"]["inputs"]] == ["pingpong.py", "data.bin"]
    assert all(s.startswith("upload:") for s in sources)
    upload = _api(gateway, page, "GET", f"/uploads/{sources[1].removeprefix('upload:')}").json()
    assert upload["sha256"] == hashlib.sha256(data.read_bytes()).hexdigest()

    # Watched without a reload: the mark set now is still there when the job has ended.
    page.evaluate("window.__noReload = true")
    expect(page.locator("#job-state")).to_have_text("COMPLETED", timeout=LONG)
    assert page.evaluate("window.__noReload") is True
    expect(page.locator("#events")).to_contain_text("COMPLETED")
    expect(page.locator("#log")).to_contain_text('"bytes": 4096', timeout=LONG)
    row = page.locator("#outputs tr[data-path='results.jsonl']")
    expect(row).to_be_visible(timeout=LONG)
    listed = row.locator(".sha").inner_text()
    with page.expect_download() as download:
        row.get_by_role("link").click()
    fetched = Path(download.value.path()).read_bytes()
    assert hashlib.sha256(fetched).hexdigest() == listed
    assert b'"bytes": 4096' in fetched
    _shot(page, tmp_path, "portal-job.png")
    # The console's only complaint: the connection this test dropped.
    assert [p for p in problems if "net::ERR_CONNECTION_RESET" not in p] == []
    assert len(problems) == 1


def test_the_jobs_list_follows_jobs_live(gateway: Gateway, page: Page, tmp_path: Path) -> None:
    problems = watch_console(page)
    _sign_in(page, gateway)
    expect(page.locator("#live")).to_contain_text("Live")
    page.evaluate("window.__noReload = true")
    job_id = _waiting_job(gateway, page, "live-row")
    row = page.locator(f"#jobs tr[data-job-id='{job_id}']")
    expect(row).to_be_visible()  # a job submitted after the page was drawn
    expect(row.locator(".state-cell")).to_have_text("RUNNING", timeout=LONG)
    _let_go(gateway, job_id)
    expect(row.locator(".state-cell")).to_have_text("COMPLETED", timeout=LONG)
    assert page.evaluate("window.__noReload") is True
    _shot(page, tmp_path, "portal-jobs.png")

    # Filters are the API's: by state and name.
    page.goto(f"{gateway.url}/portal/jobs?state=COMPLETED&name_glob=live-*")
    expect(page.locator("#jobs tbody tr")).to_have_count(1)
    page.goto(f"{gateway.url}/portal/jobs?state=FAILED")
    expect(page.locator("#empty")).to_be_visible()
    assert problems == []


def test_the_wait_if_late_shows_once_the_site_has_seen_long_waits(
        gateway: Gateway, page: Page, tmp_path: Path) -> None:
    """The second part of the forecast: "—" while no job at the site waited over 10 min;
    once its records show half its jobs waiting 2 h, the estimate and an `auto` job's
    placement say so."""
    problems = watch_console(page)
    _sign_in(page, gateway, "/portal/submit")
    page.get_by_label("Name (required)").fill("if-late")
    page.get_by_label("Executable", exact=True).fill("/bin/true")
    late = page.locator("#estimate-table tr[data-site='local'] td").nth(2)
    page.get_by_role("button", name="Estimate").click()
    expect(late).to_have_text("—")

    log = tmp_path / "local.swf"  # Standard Workload Format: 30 started at once, 30 in 2 h
    log.write_text("; UnixStartTime: 1700000000\n" + "".join(
        f"{n} {60 * n} {7200 if n % 2 else 0} 60 1 -1 -1 1 600 -1 1 1 1 -1 1 -1 -1 -1\n"
        for n in range(1, 61)))
    imported = gateway.gridgate("admin", "history", "import", "local", str(log))
    assert "Imported 60 waits" in imported.stderr, imported.stderr
    page.get_by_role("button", name="Estimate").click()
    expect(late).to_have_text("in 2.0 h")

    r = _api(gateway, page, "POST", "/jobs", json={"name": "if-late", "executable": "/bin/true"})
    assert r.status_code == 202, r.text
    job_id = r.json()["id"]
    page.goto(f"{gateway.url}/portal/jobs/{job_id}")  # placed now or live, by its event
    expect(page.locator("#placement tr[data-site='local'] td").nth(3)).to_have_text(
        "2.0 h", timeout=LONG)
    assert problems == []


def test_a_site_routing_did_not_forecast_says_how_soon_it_could_finish(
        gateway: Gateway, page: Page) -> None:
    """A routing pass under `fastest` forecasts only the sites that could come first or
    second (this gateway has one site, so the page is served its real placement with a
    third site added as the API sends one: `not_before`, no forecast)."""
    problems = watch_console(page)
    _sign_in(page, gateway)
    r = _api(gateway, page, "POST", "/jobs", json={"name": "pruned", "executable": "/bin/true"})
    assert r.status_code == 202, r.text
    job_id = r.json()["id"]

    def with_far_site(route: Route) -> None:
        placement = route.fetch().json()
        placement["candidates"].append({"site": "far", "excluded": None, "forecast": None,
                                        "p_deadline": None, "not_before": 9000.0})
        route.fulfill(json=placement)

    page.route(f"**/api/v1/jobs/{job_id}/placement", with_far_site)
    page.goto(f"{gateway.url}/portal/jobs/{job_id}")
    far = page.locator("#placement tr[data-site='far'] td")
    expect(far.last).to_have_text("not forecast: it cannot finish here within 2.5 h",
                                  timeout=LONG)
    expect(far.nth(2)).to_have_text("—")
    assert problems == []


def test_a_job_page_read_before_its_stream_opened_shows_what_happened_meanwhile(
        gateway: Gateway, page: Page) -> None:
    """The stream sends what happens from its opening on: a page that had to read the job
    before its stream opened (held here until the job has run) reads it again then.
    Found by CI: a job placed between the page's first read and its stream's opening
    kept "Not placed yet" to its end."""
    problems = watch_console(page)
    _sign_in(page, gateway, "/portal/submit")  # a page without a stream of its own
    held: list[Route] = []
    page.route("**/api/v1/events?*", lambda route: held.append(route))
    _drained(gateway, True)  # the job waits for a site while the page reads it
    try:
        r = _api(gateway, page, "POST", "/jobs", json={"name": "meanwhile",
                                                       "executable": "/bin/true"})
        assert r.status_code == 202, r.text
        job_id = r.json()["id"]
        page.goto(f"{gateway.url}/portal/jobs/{job_id}")
        expect(page.locator("#placement-why")).to_have_text("Not placed yet.")
        expect(page.locator("#job-state")).to_have_text("ACCEPTED")
    finally:
        _drained(gateway, False)
    for _ in range(LONG // 500):  # the worker places and runs it; the page hears nothing
        if _api(gateway, page, "GET", f"/jobs/{job_id}").json()["state"] == "COMPLETED":
            break
        page.wait_for_timeout(500)
    expect(page.locator("#placement-why")).to_have_text("Not placed yet.")
    assert len(held) == 1, [(r.request.url, r.request.frame.url) for r in held]
    held[0].continue_()
    expect(page.locator("#job-state")).to_have_text("COMPLETED")
    expect(page.locator("#placement tr[data-site='local'] td").nth(1)).to_have_text("yes")
    assert problems == []


def _drained(gateway: Gateway, value: bool) -> None:
    engine = make_engine(_settings(gateway).resolved_database_url)
    try:
        with transaction(make_session_factory(engine)) as session:
            session.execute(update(Site).where(Site.name == "local").values(drained=value))
    finally:
        engine.dispose()


def test_a_job_is_cancelled_from_its_page(gateway: Gateway, page: Page) -> None:
    problems = watch_console(page)
    _sign_in(page, gateway)
    job_id = _waiting_job(gateway, page, "to-cancel")
    page.goto(f"{gateway.url}/portal/jobs/{job_id}")
    expect(page.locator("#job-state")).to_have_text("RUNNING", timeout=LONG)
    page.get_by_role("button", name="Cancel").click()
    expect(page.locator("#job-state")).to_have_text("CANCELLED", timeout=LONG)
    expect(page.get_by_role("button", name="Cancel")).to_be_disabled()
    assert _api(gateway, page, "GET", f"/jobs/{job_id}").json()["state"] == "CANCELLED"
    assert problems == []


def test_another_users_job_is_a_404_page(gateway: Gateway, browser: Browser,
                                         page: Page) -> None:
    other = browser.new_context()
    bob = other.new_page()
    _sign_in(bob, gateway, username="bob")
    bobs_job = _waiting_job(gateway, bob, "bobs")
    _sign_in(page, gateway)
    response = page.goto(f"{gateway.url}/portal/jobs/{bobs_job}")
    assert response is not None and response.status == 404
    expect(page.get_by_role("heading", name="Not found")).to_be_visible()
    assert _api(gateway, page, "GET", f"/jobs/{bobs_job}").status_code == 404
    r = _api(gateway, page, "POST", f"/jobs/{bobs_job}/cancel")
    assert r.status_code == 404
    # bob's job is in no list of alice's, and still waits; bob cancels it.
    page.goto(f"{gateway.url}/portal/jobs")
    expect(page.locator("#live")).to_contain_text("Live")
    expect(page.locator(f"#jobs tr[data-job-id='{bobs_job}']")).to_have_count(0)
    assert _api(gateway, bob, "POST", f"/jobs/{bobs_job}/cancel").status_code == 202
    other.close()


def test_the_forms_error_is_the_clis(gateway: Gateway, page: Page, tmp_path: Path) -> None:
    """A spec with neither `executable` nor `script`, and a bad walltime."""
    _sign_in(page, gateway, "/portal/submit")
    page.get_by_label("Name (required)").fill("bad")
    _open_group(page, "resources")
    page.get_by_label("Walltime").fill("soon")
    page.get_by_role("button", name="Submit").click()
    shown = page.locator("#error")
    expect(shown).to_be_visible()
    spec = json.loads(page.locator("#spec-preview").text_content() or "")
    assert spec == {"name": "bad", "resources": {"walltime": "soon"}}
    (tmp_path / "bad.json").write_text(json.dumps(spec))
    config = tmp_path / "cli"
    config.mkdir()
    (config / "credentials.json").write_text(json.dumps({
        "gateway": gateway.url, "access_token": _token(page), "refresh_token": None,
        "expires_at": None, "client_id": "portal",
        "token_endpoint": f"{gateway.url}/oauth/token"}))
    cli = gateway.gridgate("submit", "--file", str(tmp_path / "bad.json"), config_dir=config)
    assert cli.returncode == 5, cli.stderr
    said = cli.stderr.strip().removeprefix("error: ")
    assert shown.inner_text().strip() == said
    assert "walltime" in said


def test_the_session_is_the_pages_only(gateway: Gateway, page: Page) -> None:
    """The API takes the portal's cookie for reads; a write needs the page's CSRF token;
    another site cannot sign the person out; signing out kills the token."""
    _sign_in(page, gateway)
    token = _token(page)
    cookies = {"gridgate_portal": token}
    spec = {"name": "csrf", "executable": "/bin/true", "site": "local"}
    assert httpx.get(f"{gateway.url}/api/v1/jobs", cookies=cookies).status_code == 200
    refused = httpx.post(f"{gateway.url}/api/v1/jobs", cookies=cookies, json=spec)
    assert refused.status_code == 403 and "CSRF" in refused.json()["detail"]
    csrf = page.locator('meta[name="csrf-token"]').get_attribute("content")
    assert csrf
    allowed = httpx.post(f"{gateway.url}/api/v1/jobs", cookies=cookies, json=spec,
                         headers={"X-CSRF-Token": csrf})
    assert allowed.status_code == 202, allowed.text
    forged = httpx.post(f"{gateway.url}/portal/logout", cookies=cookies,
                        data={"csrf_token": "x" * 64})
    assert forged.status_code == 403
    assert _api(gateway, page, "GET", "/me").status_code == 200
    page.get_by_role("button", name="Sign out").click()
    expect(page).to_have_url(f"{gateway.url}/portal/login")
    r = httpx.get(f"{gateway.url}/api/v1/me", headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 401


AXE = Path(__file__).resolve().parent / "axe" / "node_modules" / "axe-core" / "axe.min.js"


def _axe(page: Page) -> list[dict[str, Any]]:
    """axe-core's serious and critical violations on the page as it is now."""
    if not AXE.is_file():
        pytest.fail(f"{AXE} is missing: run tests/run.sh (npm ci in tests/browser/axe).")
    page.add_script_tag(path=str(AXE))
    found: list[dict[str, Any]] = page.evaluate("async () => (await axe.run()).violations")
    return [{"id": v["id"], "impact": v["impact"], "nodes": [n["target"] for n in v["nodes"]]}
            for v in found if v["impact"] in ("serious", "critical")]


@pytest.mark.parametrize("width", [360, 1920])
def test_every_page_passes_axe_and_fits(gateway: Gateway, browser: Browser, width: int,
                                        tmp_path: Path) -> None:
    """axe-core finds no serious or critical violation, nothing is wider than the window
    and the console stays quiet, at a phone's width and a desktop's (the pages' CSP is
    bypassed only so the test can inject axe)."""
    context = browser.new_context(viewport={"width": width, "height": 900},
                                  bypass_csp=True, locale="en-US")
    page = context.new_page()
    problems = watch_console(page)
    try:
        page.goto(f"{gateway.url}/portal/jobs")
        pages: dict[str, list[dict[str, Any]]] = {"login": _axe(page)}
        _sign_in(page, gateway)
        job_id = _waiting_job(gateway, page, "axe")
        waiting = {
            "jobs": ("/portal/jobs", "#jobs tbody tr"),
            "job": (f"/portal/jobs/{job_id}", "#summary dt"),
            "submit": ("/portal/submit", ".spec-fields"),
            "workflows": ("/portal/workflows", "h1"),
            "sites": ("/portal/sites", "#sites tbody tr"),
            "not found": ("/portal/jobs/00000000-0000-4000-8000-000000000000", "h1"),
        }
        for name, (path, ready) in waiting.items():
            page.goto(f"{gateway.url}{path}")
            expect(page.locator(ready).first).to_be_visible()
            if name == "submit":  # every group open: all controls in view of axe
                for summary in page.locator("details > summary").all():
                    summary.click()
            pages[name] = _axe(page)
            wide = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
            assert wide <= 0, f"{name} at {width} px is {wide} px too wide"
            _shot(page, tmp_path, f"portal-{name.replace(' ', '-')}-{width}.png")
        print(f"axe at {width} px: " + ", ".join(f"{k}: {len(v)} serious or critical"
                                                 for k, v in pages.items()))
        assert pages == {name: [] for name in pages}
        # No console errors, but the 404 page's own status.
        assert [p for p in problems if "status of 404" not in p] == []
        assert len(problems) == 1
        _api(gateway, page, "POST", f"/jobs/{job_id}/cancel")
    finally:
        context.close()


def test_keyboard_only(gateway: Gateway, page: Page) -> None:
    """Signed in, a person reaches a job from the list and cancels it with keys alone."""
    _sign_in(page, gateway)
    job_id = _waiting_job(gateway, page, "keys")
    page.goto(f"{gateway.url}/portal/jobs?name_glob=keys")
    link = page.locator(f"#jobs tr[data-job-id='{job_id}'] a")
    expect(link).to_be_visible()
    for _ in range(60):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.href || ''").endswith(job_id):
            break
    else:
        pytest.fail("Tab never reached the job's link")
    page.keyboard.press("Enter")
    expect(page).to_have_url(f"{gateway.url}/portal/jobs/{job_id}")
    expect(page.locator("#job-state")).to_have_text("RUNNING", timeout=LONG)
    expect(page.locator("#cancel")).to_be_enabled()
    for _ in range(30):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.id") == "cancel":
            break
    else:
        pytest.fail("Tab never reached the Cancel button")
    page.keyboard.press("Enter")
    expect(page.locator("#job-state")).to_have_text("CANCELLED", timeout=LONG)


def test_a_workflows_graph_follows_its_steps(gateway: Gateway, page: Page,
                                             tmp_path: Path) -> None:
    """The example workflow (a mesh step, a 3-way matrix, a gather) drawn as three steps
    and two arrows, the matrix folded into one box; its states change live to completed,
    and a step's box leads to its job's page."""
    problems = watch_console(page)
    _sign_in(page, gateway)
    spec = yaml.safe_load((EXAMPLE.parent / "workflow" / "workflow.yaml").read_text())
    r = _api(gateway, page, "POST", "/workflows", json=spec)
    assert r.status_code == 202, r.text
    workflow_id = r.json()["id"]
    page.goto(f"{gateway.url}/portal/workflows")
    page.get_by_role("link", name="mesh-solve-gather").first.click()
    expect(page).to_have_url(f"{gateway.url}/portal/workflows/{workflow_id}")
    page.evaluate("window.__noReload = true")
    graph = page.locator("#graph svg")
    expect(graph.locator("g.step")).to_have_count(3)
    expect(graph.locator("line.edge")).to_have_count(2)
    expect(graph.locator("g[data-step='solve'] text.step-name")).to_have_text("solve \u00d73")
    expect(page.locator("#workflow-state")).to_have_text("COMPLETED", timeout=LONG)
    for step in ("mesh", "solve", "gather"):
        expect(graph.locator(f"g[data-step='{step}']")).to_have_attribute("data-state",
                                                                         "completed")
    assert page.evaluate("window.__noReload") is True
    _shot(page, tmp_path, "portal-workflow.png")
    page.locator("#graph a[aria-label^='gather']").click()
    expect(page.locator("#job-name")).to_have_text("gather")
    expect(page.locator("#job-state")).to_have_text("COMPLETED")
    assert problems == []
