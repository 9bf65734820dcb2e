// Sites (live load, state, and why routing leaves one out) and money (each project's
// allocations: remaining, burn-down at the current rate, and the person's share).
// Sites are read again every REFRESH; the money when one of the person's jobs ends.
import { api, el, FINAL, followEvents, showError, svg, timeEl } from "./portal.js";

const REFRESH = 15000;
const W = 360, H = 110;

function siteRow(s) {
  const load = s.load;
  const state = !s.enabled ? "disabled" : s.drained ? "drained" : s.state;
  return el("tr", { "data-site": s.name },
    el("th", { scope: "row" }, s.name, el("span", { class: "hint" }, ` ${s.kind}`)),
    el("td", {}, state, s.reason ? el("span", { class: "hint" }, ` ${s.reason}`) : ""),
    el("td", {}, load ? String(load.queued_jobs) : "—"),
    el("td", {}, load ? String(load.running_jobs) : "—"),
    el("td", {}, load && load.total_cores !== null ? `${load.free_cores} of ${load.total_cores}` : "—"),
    el("td", {}, `${s.max_nodes} × ${s.cores_per_node} cores`),
    el("td", { class: "ban" }, s.routing_ban
      ? [s.routing_ban, s.routing_ban_until ? [" until ", timeEl(s.routing_ban_until)] : ""] : "—"));
}

async function loadSites() {
  const found = await api("sites?limit=500");
  document.querySelector("#sites tbody").replaceChildren(...found.items.map(siteRow));
  document.getElementById("sites-as-of").textContent =
    `Read at ${new Date().toLocaleTimeString()}; read again every ${REFRESH / 1000} s.`;
}

/** Remaining SU from the start to now, then at the burn rate to the end (dashed), against
 *  an even spend of the award over the allocation (dotted). */
function burnDown(a) {
  const start = new Date(a.starts_at).getTime(), end = new Date(a.ends_at).getTime();
  const now = Math.min(Math.max(Date.now(), start), end);
  const top = Math.max(a.awarded_su, a.remaining_su, 1);
  const x = (t) => 4 + ((W - 8) * (t - start)) / Math.max(end - start, 1);
  const y = (su) => H - 14 - ((H - 24) * Math.max(su, 0)) / top;
  const days = (end - now) / 86400000;
  const projected = a.remaining_su - a.burn_su_per_day * days;
  return svg("svg", { viewBox: `0 0 ${W} ${H}`, class: "chart burn", role: "img",
                      "aria-label": `${a.remaining_su.toFixed(1)} of ${a.awarded_su.toFixed(1)} SU left; `
                        + `${a.burn_su_per_day.toFixed(1)} SU a day` },
    svg("line", { x1: x(start), y1: y(a.awarded_su), x2: x(end), y2: y(0), class: "even" }),
    svg("line", { x1: x(start), y1: y(a.awarded_su), x2: x(now), y2: y(a.remaining_su), class: "remaining" }),
    svg("line", { x1: x(now), y1: y(a.remaining_su), x2: x(end), y2: y(projected), class: "projected" }),
    svg("text", { x: 4, y: H - 2 }, new Date(start).toLocaleDateString()),
    svg("text", { x: W - 4, y: H - 2, "text-anchor": "end" }, new Date(end).toLocaleDateString()));
}

async function project(p) {
  const [report, usage] = await Promise.all([
    api(`reports/allocations?project=${encodeURIComponent(p.name)}`),
    api(`reports/usage?by=user&project=${encodeURIComponent(p.name)}`),
  ]);
  const me = usage.rows;  // a member sees their own row; a PI every member's
  const total = usage.total.net_su;
  const mine = me.length === 1 ? me[0].net_su : null;
  const rows = report.allocations.map((a) => el("div", { class: "allocation", "data-allocation-id": a.id },
    el("p", {}, el("strong", {}, a.pool === "*" ? "Any site" : a.pool), ` ${a.status}: `,
      `${a.remaining_su.toFixed(3)} of ${a.awarded_su.toFixed(3)} SU left, `,
      `${a.held_su.toFixed(3)} held by jobs waiting or running, `,
      `${a.burn_su_per_day.toFixed(3)} SU a day`,
      a.exhausts_at ? [", runs out ", timeEl(a.exhausts_at)] : "",
      a.exhausts_before_end ? el("strong", { class: "warn" }, " before its end") : ""),
    burnDown(a)));
  return el("section", { class: "project", "data-project": p.name },
    el("h3", {}, p.name, el("span", { class: "hint" }, ` you are ${p.standing}; ${p.available} SU available`)),
    mine !== null && p.standing === "member"
      ? el("p", { class: "share" }, `Your use: ${mine.toFixed(3)} SU.`)
      : el("p", { class: "share" }, `Use by member: `, me.map((r, i) => [i ? ", " : "", `${r.key} ${r.net_su.toFixed(3)} SU`]),
           ` (all: ${total.toFixed(3)} SU).`),
    p.standing === "pi" || p.standing === "admin" || p.standing === "auditor"
      ? el("p", {}, el("a", { href: `/dashboard?project=${encodeURIComponent(p.name)}` }, "Committee dashboard"))
      : "",
    ...rows);
}

async function loadMoney() {
  const found = await api("projects?limit=500");
  const sections = await Promise.all(found.items.map(project));
  document.getElementById("projects").replaceChildren(...sections);
}

const refresh = () => loadSites().catch((e) => showError(e.message));
setInterval(refresh, REFRESH);
followEvents([["type", "org.gridgate.job.state"]], {
  onEvent: (event) => { if (FINAL.has(event.data.to)) loadMoney().catch((e) => showError(e.message)); },
});
Promise.all([loadSites(), loadMoney()]).catch((e) => showError(e.message));
