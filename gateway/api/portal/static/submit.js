// Submit: the form from the job-spec schema, file inputs uploaded with progress, "where
// and when" from POST /jobs:estimate, then POST /jobs; on success, the job's page.
import { api, duration, el, showError, svg } from "./portal.js";
import { SchemaForm } from "./schema_form.js";
import { uploadFile } from "./uploads.js";

let form = null;
// One key per spec: pressing Submit again after a lost answer cannot make a second job.
let idempotencyKey = crypto.randomUUID();
const preview = document.getElementById("spec-preview");
const uploads = document.getElementById("uploads");

function showPreview() {
  if (form) preview.textContent = JSON.stringify(form.value(), null, 2);
}

/** Upload every chosen file; its input's source becomes `upload:<id>`. */
async function uploadChosen() {
  for (const item of form.uploads) {
    if (!item.file) continue;
    const file = item.file;
    const bar = el("progress", { max: file.size || 1, value: 0, id: `progress-${uploads.children.length}` });
    const words = el("span", {}, "");
    uploads.append(el("div", { class: "upload" },
      el("label", { for: bar.id }, `Uploading ${file.name}`), bar, words));
    const done = await uploadFile(file, (sent, total, note) => {
      bar.value = sent;
      words.textContent = ` ${Math.floor((100 * sent) / (total || 1))}%${note ? ` ${note}` : ""}`;
    });
    bar.value = bar.max;
    words.textContent = " uploaded";
    item.source.value = `upload:${done.id}`;
    if (item.dest && !item.dest.value) item.dest.value = file.name;
    item.file = null;
    item.chooser.value = "";
  }
}

// --- where and when -----------------------------------------------------------------
const W = 640, ROW = 26, LABEL = 120;

function chart(estimate) {
  const rows = estimate.candidates.filter((c) => c.forecast);
  const starts = rows.map((c) => c.forecast.staging + c.forecast.wait_bound);
  const top = Math.max(60, ...starts.filter(Number.isFinite));
  const x = (s) => LABEL + ((W - LABEL - 20) * Math.min(s, top)) / top;
  const h = rows.length * ROW + 24;
  const marks = rows.map((c, i) => {
    const f = c.forecast, y = i * ROW + 6;
    const likely = f.staging + (f.wait_likely ?? f.wait_median);
    const bound = f.staging + f.wait_bound;
    return svg("g", { "data-site": c.site },
      svg("text", { x: 0, y: y + 13 }, c.site),
      svg("line", { x1: x(likely), x2: x(bound), y1: y + 9, y2: y + 9, class: "whisker" }),
      svg("rect", { x: LABEL, y, width: Math.max(2, x(likely) - LABEL), height: 18,
                    class: estimate.chosen.includes(c.site) ? "bar chosen" : "bar" }),
      svg("title", {}, `${c.site}: starts in about ${duration(likely)}, 95% within ${duration(bound)}`));
  });
  return svg("svg", { viewBox: `0 0 ${W} ${h}`, role: "img", class: "chart",
                      "aria-label": "Predicted start at each site, with its 95% bound" },
    ...marks,
    svg("text", { x: LABEL, y: h - 4 }, "now"),
    svg("text", { x: W - 20, y: h - 4, "text-anchor": "end" }, `+${duration(top)}`));
}

async function balanceOf(project) {
  if (project) return api(`projects/${encodeURIComponent(project)}/balance`);
  const mine = await api("projects?limit=500");
  const personal = mine.items.find((p) => p.personal);
  return personal ? api(`projects/${encodeURIComponent(personal.name)}/balance`) : null;
}

async function estimate() {
  const box = document.getElementById("estimate-result");
  // The chosen files first: routing weighs their staging, and the submit needs them too.
  await uploadChosen();
  showPreview();
  box.replaceChildren(el("p", {}, "Estimating…"));
  const spec = form.value();
  const [found, balance] = await Promise.all([
    api("jobs:estimate", { method: "POST", body: spec }),
    balanceOf(spec.project).catch(() => null),
  ]);
  const table = el("table", { id: "estimate-table" },
    el("thead", {}, el("tr", {}, ...["Site", "Predicted start", "If not started in 10 min",
                                     "95% bound", "Cost", "Excluded because"]
      .map((h) => el("th", { scope: "col" }, h)))),
    el("tbody", {}, ...found.candidates.map((c) => {
      const f = c.forecast;
      return el("tr", { "data-site": c.site },
        el("td", {}, c.site, found.chosen.includes(c.site) ? " (chosen)" : ""),
        el("td", {}, f ? `in ${duration(f.staging + (f.wait_likely ?? f.wait_median))}` : "—"),
        // The second part of the forecast: absent until the site has seen a wait that long.
        el("td", {}, f?.wait_if_late != null ? `in ${duration(f.staging + f.wait_if_late)}` : "—"),
        el("td", {}, f ? `within ${duration(f.staging + f.wait_bound)}` : "—"),
        el("td", {}, c.quote_su ? `${c.quote_su} SU` : "—"),
        el("td", {}, c.excluded || c.caution || ""));
    })));
  const words = [el("p", { id: "estimate-why" }, found.why)];
  if (balance) {
    words.push(el("p", { id: "estimate-balance" },
      `Project ${balance.project} has ${balance.available} SU available.`));
  }
  box.replaceChildren(...words, found.candidates.some((c) => c.forecast) ? chart(found) : "",
                      el("div", { class: "scroll", tabindex: 0, role: "region",
                                  "aria-label": "Estimate by site (scrolls sideways)" }, table));
}

async function submit(event) {
  event.preventDefault();
  const button = document.getElementById("submit");
  button.disabled = true;
  showError(null);
  try {
    await uploadChosen();
    showPreview();
    const job = await api("jobs", { method: "POST", body: form.value(),
                                    headers: { "Idempotency-Key": idempotencyKey } });
    location.assign(`/portal/jobs/${job.id}`);
  } catch (error) {
    showError(error.message);
    button.disabled = false;
  }
}

api("schemas/job-spec").then((schema) => {
  form = new SchemaForm(schema, document.getElementById("spec-form"));
  document.getElementById("submit-form").addEventListener("input", () => {
    idempotencyKey = crypto.randomUUID();
    showPreview();
  });
  document.getElementById("submit-form").addEventListener("submit", submit);
  document.getElementById("estimate").addEventListener("click", () => {
    showError(null);
    estimate().catch((error) => {
      document.getElementById("estimate-result").replaceChildren();
      showError(error.message);
    });
  });
  showPreview();
}).catch((error) => showError(error.message));
