// One workflow: its steps drawn as a graph (matrix instances folded into their step,
// arrows from what a step needs), live from the event stream; each instance links to its
// job's page.
import { api, el, followEvents, showError, stateBadge, svg } from "./portal.js";

const workflowId = document.getElementById("workflow").dataset.workflowId;
const BOX_W = 170, BOX_H = 54, GAP_X = 60, GAP_Y = 18;

/** Steps (folded instances) in layers: a step one layer right of the last it needs. */
export function layout(instances) {
  const steps = new Map();
  for (const i of instances) {
    const step = steps.get(i.step) || { name: i.step, instances: [], needs: new Set() };
    step.instances.push(i);
    steps.set(i.step, step);
  }
  const stepOf = new Map(instances.map((i) => [i.instance, i.step]));
  for (const i of instances) {
    for (const need of i.needs) {
      const from = stepOf.get(need);
      if (from && from !== i.step) steps.get(i.step).needs.add(from);
    }
  }
  const depth = new Map();
  const depthOf = (name, seen = new Set()) => {
    if (depth.has(name)) return depth.get(name);
    if (seen.has(name)) return 0;  // a cycle cannot be submitted; never loop on one
    seen.add(name);
    const d = Math.max(-1, ...[...steps.get(name).needs].map((n) => depthOf(n, seen))) + 1;
    depth.set(name, d);
    return d;
  };
  const layers = [];
  for (const name of steps.keys()) (layers[depthOf(name)] ||= []).push(steps.get(name));
  layers.forEach((layer, x) => layer.forEach((step, y) => { step.x = x; step.y = y; }));
  return { steps, layers };
}

function stepState(step) {
  const tally = {};
  for (const i of step.instances) tally[i.state] = (tally[i.state] || 0) + 1;
  const order = ["failed", "running", "pending", "cancelled", "skipped", "completed"];
  const shown = order.find((s) => tally[s]) || Object.keys(tally)[0];
  return { tally, shown };
}

function draw(instances) {
  const { steps, layers } = layout(instances);
  const tallest = Math.max(1, ...layers.map((l) => l.length));
  const width = layers.length * (BOX_W + GAP_X) - GAP_X + 8;
  const height = tallest * (BOX_H + GAP_Y) - GAP_Y + 8;
  const at = (s) => ({ x: 4 + s.x * (BOX_W + GAP_X), y: 4 + s.y * (BOX_H + GAP_Y) });
  const edges = [];
  for (const step of steps.values()) {
    for (const need of step.needs) {
      const a = at(steps.get(need)), b = at(step);
      edges.push(svg("line", { x1: a.x + BOX_W, y1: a.y + BOX_H / 2, x2: b.x - 6, y2: b.y + BOX_H / 2,
                               class: "edge", "marker-end": "url(#arrow)" }));
    }
  }
  const boxes = [...steps.values()].map((step) => {
    const p = at(step);
    const { tally, shown } = stepState(step);
    const folded = step.instances.length > 1;
    const summary = Object.entries(tally).map(([s, n]) => `${n} ${s}`).join(", ");
    const first = step.instances.find((i) => i.job_id);
    const box = svg("g", { class: `step step-${shown}`, "data-step": step.name,
                           "data-state": shown },
      svg("rect", { x: p.x, y: p.y, width: BOX_W, height: BOX_H, rx: 6 }),
      svg("text", { x: p.x + 8, y: p.y + 20, class: "step-name" },
          folded ? `${step.name} ×${step.instances.length}` : step.name),
      svg("text", { x: p.x + 8, y: p.y + 40 }, folded ? summary : shown),
      svg("title", {}, `${step.name}: ${summary}`));
    if (!first || folded) return box;
    const link = svg("a", { href: `/portal/jobs/${first.job_id}`,
                            "aria-label": `${step.name}: ${shown}, open its job` }, box);
    return link;
  });
  return svg("svg", { viewBox: `0 0 ${width} ${height}`, width, height, role: "img",
                      class: "dag", "aria-label": "The workflow's steps and what each needs" },
    svg("defs", {}, svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5,
                                    markerWidth: 7, markerHeight: 7, orient: "auto" },
                        svg("path", { d: "M0,0 L10,5 L0,10 z" }))),
    ...edges, ...boxes);
}

function render(workflow) {
  document.getElementById("workflow-name").textContent = workflow.name;
  document.getElementById("workflow-state").replaceChildren(stateBadge(workflow.state.toUpperCase()));
  document.title = `${workflow.name} · gridgate`;
  document.getElementById("cancel").disabled = Boolean(workflow.ended_at || workflow.cancel_requested);
  document.getElementById("graph").replaceChildren(draw(workflow.steps));
  document.querySelector("#instances tbody").replaceChildren(...workflow.steps.map((i) =>
    el("tr", { "data-instance": i.instance },
      el("td", {}, i.instance), el("td", {}, stateBadge(i.state.toUpperCase())),
      el("td", {}, i.job_id ? el("a", { href: `/portal/jobs/${i.job_id}` }, i.job_state || "job") : "—"),
      el("td", {}, i.site || "—"), el("td", {}, i.needs.join(", ")),
      el("td", {}, i.reason || ""))));
}

const load = () => api(`workflows/${workflowId}`).then(render);

document.getElementById("cancel").addEventListener("click", async () => {
  try {
    render(await api(`workflows/${workflowId}/cancel`, { method: "POST" }));
  } catch (error) {
    showError(error.message);
  }
});

const status = document.getElementById("live");
followEvents([["workflow", workflowId], ["type", "org.gridgate.workflow.state"],
              ["type", "org.gridgate.workflow.step"]], {
  onEvent: () => load().catch((e) => showError(e.message)),
  onStatus: (words) => { status.textContent = words; },
  onGone: () => load().catch((e) => showError(e.message)),
});
load().catch((e) => showError(e.message));
