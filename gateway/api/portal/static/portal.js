// What every portal page shares: the API (with the session's CSRF token), the event
// stream, and building DOM from data. User text only ever becomes text nodes.

const API = "/api/v1";

/** A refusal of the API: its problem document (RFC 9457), readable as a message. */
export class Problem extends Error {
  constructor(status, doc) {
    super(problemMessage(status, doc));
    this.status = status;
    this.doc = doc;
  }
}

/** The words a person reads for a problem document: the same lines the CLI prints
 *  (gateway.cli.errors.report), so the portal and the CLI say the same about a spec. */
export function problemMessage(status, doc) {
  const problem = doc && typeof doc === "object" ? doc : {};
  const title = problem.title || `HTTP ${status}`;
  const errors = (problem.errors || []).filter((e) => e && typeof e === "object");
  if (!errors.length) {
    if (problem.detail) return problem.detail;
    return status >= 500 ? `The gateway failed (${status}); its log says why.` : title;
  }
  const count = errors.length;
  return [`${title} (${count} problem${count > 1 ? "s" : ""}):`,
          ...errors.map((e) => `  ${e.field ?? ""}: ${e.message ?? ""}`)].join("\n");
}

export function csrfToken() {
  const meta = document.querySelector('meta[name="csrf-token"]');
  return meta ? meta.content : "";
}

/** Back to the sign-in form, then here again (the session ended). */
export function signInAgain() {
  const here = location.pathname + location.search;
  location.assign(`/portal/login?ended=1&next=${encodeURIComponent(here)}`);
}

/** Call the API: JSON in and out; a Problem for any refusal. */
export async function api(path, { method = "GET", body, headers = {}, raw = false } = {}) {
  const init = { method, headers: { Accept: "application/json", ...headers },
                 credentials: "same-origin" };
  if (method !== "GET" && method !== "HEAD") init.headers["X-CSRF-Token"] = csrfToken();
  if (body !== undefined) {
    if (body instanceof Blob || body instanceof ArrayBuffer) {
      init.body = body;
    } else {
      init.body = JSON.stringify(body);
      init.headers["Content-Type"] = "application/json";
    }
  }
  const response = await fetch(path.startsWith("/") ? path : `${API}/${path}`, init);
  if (response.status === 401) {
    signInAgain();
    throw new Problem(401, { detail: "Your session has ended; signing in again." });
  }
  if (!response.ok) {
    let doc = null;
    try { doc = await response.json(); } catch { /* not a problem document */ }
    throw new Problem(response.status, doc);
  }
  if (raw) return response;
  return response.status === 204 ? null : response.json();
}

/** An element with attributes and children (strings become text nodes, never HTML). */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** An SVG element (charts). */
export function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  for (const child of children.flat()) {
    if (child !== null && child !== undefined) {
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
  }
  return node;
}

export const FINAL = new Set(["COMPLETED", "FAILED", "CANCELLED"]);

export function shortId(id) { return id.slice(0, 8); }

/** A time for people (local, to the second), in a <time> with the exact value. */
export function timeEl(iso) {
  if (!iso) return "";
  const at = new Date(iso);
  return el("time", { datetime: at.toISOString(), title: at.toISOString() },
            at.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "medium" }));
}

/** Seconds as "45 s", "12 min", "3.5 h", "2.1 d". */
export function duration(seconds) {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return "unknown";
  const s = Math.max(0, seconds);
  if (s < 90) return `${Math.round(s)} s`;
  if (s < 5400) return `${Math.round(s / 60)} min`;
  if (s < 129600) return `${(s / 3600).toFixed(1)} h`;
  return `${(s / 86400).toFixed(1)} d`;
}

export function bytes(n) {
  if (n < 1024) return `${n} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let value = n / 1024, unit = 0;
  while (value >= 1024 && unit < units.length - 1) { value /= 1024; unit += 1; }
  return `${value.toFixed(1)} ${units[unit]}`;
}

export function stateBadge(state, held = false) {
  const label = held && state === "ACCEPTED" ? "HELD" : state;
  return el("span", { class: `state state-${label.toLowerCase()}` }, label);
}

/** Show `message` in the page's alert (or hide it with null). */
export function showError(message, id = "error") {
  const box = document.getElementById(id);
  if (!box) return;
  box.textContent = message || "";
  box.hidden = !message;
}

/**
 * Follow the event stream: `onEvent(cloudEvent)` for each event of `types`, and
 * `onStatus(words, live)` as the connection comes and goes. The browser reconnects by itself
 * (with Last-Event-ID, so nothing is missed); a resume beyond the replay window calls
 * `onGone()`, after which the page should re-read what it shows.
 */
export function followEvents(params, { onEvent, onStatus = () => {}, onGone = () => {} }) {
  const query = new URLSearchParams(params);
  const source = new EventSource(`${API}/events?${query}`);
  source.onopen = () => onStatus("Live: changes appear as they happen.", true);
  source.onerror = () => onStatus(source.readyState === EventSource.CLOSED
    ? "Live updates stopped; reload the page." : "Reconnecting to live updates…", false);
  const types = query.getAll("type");
  for (const type of types) {
    source.addEventListener(type, (message) => onEvent(JSON.parse(message.data)));
  }
  source.addEventListener("org.gridgate.stream.gone", () => onGone());
  window.addEventListener("pagehide", () => source.close());
  return source;
}
