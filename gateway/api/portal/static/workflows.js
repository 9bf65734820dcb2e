// The workflows list, newest first, with how many steps are in each state.
import { api, el, showError, stateBadge, timeEl } from "./portal.js";

const params = new URLSearchParams(location.search);

function counts(stepStates) {
  return Object.entries(stepStates).filter(([, n]) => n).map(([s, n]) => `${n} ${s}`).join(", ");
}

async function load() {
  const query = new URLSearchParams({ limit: "50" });
  if (params.get("cursor")) query.set("cursor", params.get("cursor"));
  const page = await api(`workflows?${query}`);
  document.querySelector("#workflows tbody").replaceChildren(...page.items.map((w) =>
    el("tr", { "data-workflow-id": w.id },
      el("td", {}, el("a", { href: `/portal/workflows/${w.id}` }, w.name)),
      el("td", {}, stateBadge(w.state.toUpperCase())), el("td", {}, counts(w.step_states)),
      el("td", {}, w.owner), el("td", {}, timeEl(w.created_at)), el("td", {}, timeEl(w.ended_at)))));
  document.getElementById("empty").hidden = page.items.length > 0;
  if (page.next_cursor) {
    const next = document.getElementById("next-page");
    next.href = `/portal/workflows?cursor=${encodeURIComponent(page.next_cursor)}`;
    next.hidden = false;
  }
}

load().catch((e) => showError(e.message));
