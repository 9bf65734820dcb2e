// The jobs list: the filters in the URL, one page from GET /api/v1/jobs, and rows that
// follow the event stream (a state change rewrites its row; a new job that matches the
// filters appears at the top of the first page).
import {
  api, el, FINAL, followEvents, shortId, showError, stateBadge, timeEl,
} from "./portal.js";

const PAGE_SIZE = 50;
const ORDER = ["ACCEPTED", "STAGING_IN", "QUEUED", "RUNNING", "STAGING_OUT"];
const ACTIVE = ORDER.join(",");
// A job never moves backwards; every final state ranks last.
const rank = (state) => (ORDER.includes(state) ? ORDER.indexOf(state) : ORDER.length);
const params = new URLSearchParams(location.search);
const form = document.getElementById("filters");
const body = document.querySelector("#jobs tbody");

/** The API query of the filters in the page's URL. */
function apiQuery() {
  const query = new URLSearchParams({ limit: String(PAGE_SIZE) });
  for (const key of ["site", "project", "name_glob", "order", "cursor", "array_job_id"]) {
    if (params.get(key)) query.set(key, params.get(key));
  }
  const state = params.get("state");
  if (state) query.set("state", state === "active" ? ACTIVE : state);
  for (const key of ["created_after", "created_before"]) {
    // datetime-local is the person's local time; the API takes RFC 3339.
    const value = params.get(key);
    if (value) {
      const at = new Date(value);
      if (!Number.isNaN(at.getTime())) query.set(key, at.toISOString());
    }
  }
  return query;
}

function fillForm() {
  for (const control of form.elements) {
    if (control.name && params.has(control.name)) control.value = params.get(control.name);
  }
}

async function fillOptions(select, path, selected) {
  const found = await api(path);
  for (const item of found.items) {
    select.append(el("option", { value: item.name, selected: item.name === selected },
                     item.name));
  }
}

function jobName(job) {
  return job.array_job_id ? `${job.name}[${job.array_index}]` : job.name;
}

function row(job) {
  return el("tr", { "data-job-id": job.id, "data-state": job.state },
    el("td", {}, el("a", { href: `/portal/jobs/${job.id}` }, jobName(job))),
    el("td", { class: "mono" }, shortId(job.id)),
    el("td", { class: "state-cell" }, stateBadge(job.state, job.held)),
    el("td", { class: "site-cell" }, job.site || "—"),
    el("td", {}, job.project),
    el("td", {}, job.owner),
    el("td", {}, timeEl(job.created_at)),
    el("td", { class: "ended-cell" }, timeEl(job.ended_at)));
}

function rowOf(jobId) {
  return body.querySelector(`tr[data-job-id="${CSS.escape(jobId)}"]`);
}

async function load() {
  const page = await api(`jobs?${apiQuery()}`);
  body.replaceChildren(...page.items.map(row));
  document.getElementById("empty").hidden = page.items.length > 0;
  const next = document.getElementById("next-page");
  if (page.next_cursor) {
    const more = new URLSearchParams(params);
    more.set("cursor", page.next_cursor);
    next.href = `/portal/jobs?${more}`;
    next.hidden = false;
  }
  if (params.get("cursor")) {
    const first = new URLSearchParams(params);
    first.delete("cursor");
    document.getElementById("first-page").href = `/portal/jobs?${first}`;
    document.getElementById("first-page").hidden = false;
  }
}

/** A job the stream names that this page does not show: it is added at the top when it
 *  matches the filters (the API decides, asked for just that job). */
async function maybeAdd(jobId) {
  if (params.get("cursor") || params.get("order") === "oldest") return;
  const query = apiQuery();
  query.set("id_prefix", jobId);
  query.set("limit", "1");
  const found = await api(`jobs?${query}`);
  if (found.items.length && !rowOf(jobId)) {
    body.prepend(row(found.items[0]));
    document.getElementById("empty").hidden = true;
  }
}

function onEvent(event) {
  if (pending) { pending.push(event); return; }
  const jobId = event.subject;
  const tr = rowOf(jobId);
  if (event.type === "org.gridgate.job.state") {
    if (tr && rank(event.data.to) < rank(tr.dataset.state)) return;  // older than the row
    if (!tr) {
      if (event.data.from === null) maybeAdd(jobId).catch((e) => showError(e.message));
      return;
    }
    const wanted = params.get("state");
    tr.dataset.state = event.data.to;
    tr.dataset.eventId = event.id;  // the last change shown (benchmarks/portal.py times it)
    tr.querySelector(".state-cell").replaceChildren(stateBadge(event.data.to));
    if (event.data.job.site) tr.querySelector(".site-cell").textContent = event.data.job.site;
    if (FINAL.has(event.data.to)) tr.querySelector(".ended-cell").replaceChildren(timeEl(event.time));
    // A row that no longer matches the state filter stays, marked, until the next load.
    tr.classList.toggle("stale", Boolean(wanted) && wanted !== "active"
                                 && wanted !== event.data.to);
  } else if (event.type === "org.gridgate.job.placement" && tr) {
    tr.querySelector(".site-cell").textContent = event.data.chosen.join(", ");
  }
}

// Events that come before the first page is drawn wait for it; the page is read once
// the stream is open (or has not opened in 2 s), so no change falls between the two.
let pending = [];
function drawn() {
  const waiting = pending;
  pending = null;
  waiting.forEach(onEvent);
}

fillForm();
const status = document.getElementById("live");
let opened;
const open = new Promise((resolve) => { opened = resolve; setTimeout(resolve, 2000); });
followEvents([["type", "org.gridgate.job.state"], ["type", "org.gridgate.job.placement"]], {
  onEvent,
  onStatus: (words, live) => { status.textContent = words; if (live) opened(); },
  onGone: () => load().catch((e) => showError(e.message)),
});
Promise.all([
  open.then(load).then(drawn),
  fillOptions(document.getElementById("f-site"), "sites?limit=500", params.get("site")),
  fillOptions(document.getElementById("f-project"), "projects?limit=500", params.get("project")),
]).catch((e) => showError(e.message));
