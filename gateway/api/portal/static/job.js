// One job: its state and why, where routing placed it and what it predicted, its
// attempts and events, a live tail of its log, its outputs, and cancel / hold / release.
// Every part is read from the API; the event stream says when to read again.
import {
  api, bytes, duration, el, FINAL, followEvents, Problem, showError, stateBadge, timeEl,
} from "./portal.js";

const jobId = document.getElementById("job").dataset.jobId;
const LOG_TAIL = 64 * 1024;      // what the log shows at first
const LOG_KEEP = 512 * 1024;     // and at most, as it grows
let job = null;
let predicted = null;            // { at, site, basis }

function dlRow(term, ...value) {
  return [el("dt", {}, term), el("dd", {}, ...value)];
}

function jobLink(id) {
  return el("a", { href: `/portal/jobs/${id}`, class: "mono" }, id.slice(0, 8));
}

function renderSummary() {
  const spec = job.spec || {};
  const rows = [
    dlRow("Id", el("span", { class: "mono" }, job.id)),
    dlRow("State", stateBadge(job.state, job.held), job.raw_state ? ` (site: ${job.raw_state})` : ""),
    dlRow("Reason", job.reason || "—"),
    dlRow("Site", job.site || "not yet placed"),
    dlRow("Predicted start", predicted && !job.started_at
      ? [timeEl(predicted.at), ` at ${predicted.site} (${predicted.basis})`] : "—"),
    dlRow("Project", job.project),
    dlRow("Owner", job.owner),
    dlRow("Submitted", timeEl(job.created_at)),
    dlRow("Started", job.started_at ? timeEl(job.started_at) : "—"),
    dlRow("Ended", job.ended_at ? timeEl(job.ended_at) : "—"),
    dlRow("Exit code", job.exit_code === null ? "—" : String(job.exit_code)),
  ];
  if (job.array_job_id) {
    rows.push(dlRow("Array", `task ${job.array_index} of `,
      el("a", { href: `/portal/jobs?array_job_id=${job.array_job_id}` }, "its array")));
  }
  if ((spec.depends_on || []).length) {
    rows.push(dlRow("Waits for", spec.depends_on.map((d, i) =>
      [i ? ", " : "", `${d.when} `, jobLink(d.job)])));
  }
  document.getElementById("summary").replaceChildren(...rows.flat());
  document.getElementById("job-name").textContent = job.array_job_id
    ? `${job.name}[${job.array_index}]` : job.name;
  document.getElementById("job-state").replaceChildren(stateBadge(job.state, job.held));
  document.title = `${job.name} · gridgate`;
  const final = FINAL.has(job.state);
  document.getElementById("cancel").disabled = final || job.cancel_requested;
  document.getElementById("hold").disabled = job.state !== "ACCEPTED" || job.held;
  document.getElementById("release").disabled = !job.held;
}

function renderAttempts() {
  document.querySelector("#attempts tbody").replaceChildren(...job.attempts.map((a) =>
    el("tr", {},
      el("td", {}, String(a.number)), el("td", {}, a.site),
      el("td", { class: "mono" }, a.native_id || "—"), el("td", {}, stateBadge(a.state)),
      el("td", {}, timeEl(a.submitted_at)), el("td", {}, timeEl(a.started_at)),
      el("td", {}, timeEl(a.ended_at)),
      el("td", {}, a.exit_code === null ? "—" : String(a.exit_code)),
      el("td", {}, a.reason || ""))));
}

async function loadJob() {
  job = await api(`jobs/${jobId}`);
  renderSummary();
  renderAttempts();
}

async function loadPlacement() {
  // Only a `site: auto` job that routing has placed has a decision to show.
  if ((job.spec.site ?? "auto") !== "auto" || !job.site) {
    document.getElementById("placement-why").textContent = job.site
      ? `Not routed: the job names its site, ${job.site}.` : "Not placed yet.";
    return;
  }
  const decision = await api(`jobs/${jobId}/placement`);
  document.getElementById("placement-why").textContent =
    `${decision.policy}: ${decision.why}`;
  const decided = new Date(decision.decided_at).getTime();
  const rows = decision.candidates.map((c) => {
    const f = c.forecast;
    const chosen = decision.chosen.includes(c.site);
    if (chosen && f && !predicted) {
      const wait = f.wait_likely ?? f.wait_median;
      predicted = { at: new Date(decided + (f.staging + wait) * 1000).toISOString(),
                    site: c.site, basis: "routing's forecast" };
    }
    return el("tr", { "data-site": c.site, class: chosen ? "chosen" : null },
      el("td", {}, c.site), el("td", {}, chosen ? "yes" : ""),
      el("td", {}, f ? duration(f.wait_likely ?? f.wait_median) : "—"),
      el("td", {}, f?.wait_if_late != null ? duration(f.wait_if_late) : "—"),
      el("td", {}, f ? duration(f.wait_bound) : "—"),
      el("td", {}, f ? duration(f.runtime) : "—"),
      el("td", {}, f ? duration(f.staging) : "—"),
      el("td", {}, c.excluded || c.caution || (c.not_before != null
        ? `not forecast: it cannot finish here within ${duration(c.not_before)}` : "")));
  });
  document.querySelector("#placement tbody").replaceChildren(...rows);
}

function eventItem(e) {
  return el("li", {}, timeEl(e.at), " ", e.from_state ? `${e.from_state} → ` : "",
            stateBadge(e.to_state), ` by ${e.actor}`, e.reason ? `: ${e.reason}` : "");
}

async function loadEvents() {
  const page = await api(`jobs/${jobId}/events?limit=500`);
  document.getElementById("events").replaceChildren(...page.items.map(eventItem));
}

// A job read as its project's PI: its record is shown, its files are the owner's.
const notOwners = (error) => error instanceof Problem && error.status === 404;

async function loadOutputs() {
  let page;
  try {
    page = await api(`jobs/${jobId}/outputs?limit=500`);
  } catch (error) {
    if (!notOwners(error)) throw error;
    document.getElementById("no-outputs").textContent = "Only the job's owner reads its files.";
    document.getElementById("no-outputs").hidden = false;
    return;
  }
  const rows = page.items.map((o) => {
    const href = `/api/v1/jobs/${jobId}/outputs/${o.path.split("/").map(encodeURIComponent).join("/")}`;
    return el("tr", { "data-path": o.path },
      el("td", {}, el("a", { href, download: o.path.split("/").pop() }, o.path)),
      el("td", {}, bytes(o.size)), el("td", { class: "mono sha" }, o.sha256));
  });
  document.querySelector("#outputs tbody").replaceChildren(...rows);
  document.getElementById("no-outputs").hidden = rows.length > 0;
}

// --- the log: the last LOG_TAIL bytes, then followed until the job ends -------------
const log = document.getElementById("log");
let logStream = "stdout";
let logAbort = null;

let logOpen = false;  // a follow is reading now

async function followLog() {
  if (logAbort) logAbort.abort();
  logOpen = true;
  const abort = new AbortController();
  logAbort = abort;
  log.textContent = "";
  let response;
  try {
    response = await api(`jobs/${jobId}/logs/${logStream}?tail=${LOG_TAIL}&follow=true`,
                         { raw: true, headers: { Accept: "text/plain" } });
  } catch (error) {
    log.textContent = notOwners(error) ? "(Only the job's owner reads its log.)"
      : `(no ${logStream} yet: ${error.message})`;
    logOpen = false;
    return;
  }
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  abort.signal.addEventListener("abort", () => reader.cancel());
  for (;;) {
    const { value, done } = await reader.read().catch(() => ({ done: true }));
    if (done) break;
    const atBottom = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
    log.append(value);
    if (log.textContent.length > LOG_KEEP) log.textContent = log.textContent.slice(-LOG_KEEP);
    if (atBottom) log.scrollTop = log.scrollHeight;
  }
  if (!abort.signal.aborted) {
    log.dataset.complete = "true";
    logOpen = false;
  }
}

for (const name of ["stdout", "stderr"]) {
  document.getElementById(`show-${name}`).addEventListener("click", () => {
    logStream = name;
    for (const other of ["stdout", "stderr"]) {
      document.getElementById(`show-${other}`).setAttribute("aria-pressed", String(other === name));
    }
    followLog();
  });
}

// --- actions ---------------------------------------------------------------------------
for (const action of ["cancel", "hold", "release"]) {
  const button = document.getElementById(action);
  button.addEventListener("click", async () => {
    button.disabled = true;
    try {
      job = await api(`jobs/${jobId}/${action}`, { method: "POST" });
      showError(null);
      renderSummary();
    } catch (error) {
      showError(error.message);
      renderSummary();
    }
  });
}

// --- live --------------------------------------------------------------------------------
let started = false;
function onEvent(event) {
  if (event.type === "org.gridgate.job.prediction") {
    predicted = { at: event.data.predicted_start, site: event.data.site, basis: event.data.basis };
    if (job) renderSummary();
    return;
  }
  if (event.type === "org.gridgate.job.placement") {
    loadJob().then(loadPlacement).then(renderSummary).catch((e) => showError(e.message));
    return;
  }
  Promise.all([loadJob(), loadEvents()]).then(() => {
    if (!started && ["RUNNING", "STAGING_OUT", ...FINAL].includes(job.state)) {
      started = true;
      followLog();
    }
    // A log that could not be read yet (nothing written when the job started): now.
    if (FINAL.has(job.state) && !logOpen && !log.dataset.complete) followLog();
    if (FINAL.has(job.state)) return loadOutputs();
    return null;
  }).catch((e) => showError(e.message));
}

// The page is read once the stream is open (or has not opened in 2 s), so no change falls
// between the two; a stream that opens only after that reads the page again once (the
// stream sends what happens from its opening on, not what happened before).
const status = document.getElementById("live");
let opened;
const open = new Promise((resolve) => { opened = resolve; setTimeout(resolve, 2000, "late"); });
let readBeforeOpen = false;
followEvents([["job", jobId], ["type", "org.gridgate.job.state"],
              ["type", "org.gridgate.job.placement"], ["type", "org.gridgate.job.prediction"],
              ["type", "org.gridgate.attempt.state"]], {
  onEvent,
  onStatus: (words, live) => {
    status.textContent = words;
    if (!live) return;
    opened("open");
    if (readBeforeOpen) {
      readBeforeOpen = false;
      onEvent({ type: "org.gridgate.job.placement" });
      onEvent({ type: "org.gridgate.job.state" });
    }
  },
  onGone: () => onEvent({ type: "org.gridgate.job.state" }),
});
open.then((how) => { readBeforeOpen = how === "late"; })
  .then(loadJob)
  .then(() => Promise.all([loadPlacement(), loadEvents(), loadOutputs()]))
  .then(() => {
    renderSummary();
    if (!["ACCEPTED", "STAGING_IN", "QUEUED"].includes(job.state)) {
      started = true;
      followLog();
    }
  })
  .catch((e) => showError(e.message));
