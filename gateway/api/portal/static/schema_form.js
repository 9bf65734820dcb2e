// A form built from a JSON Schema (the job spec's, GET /api/v1/schemas/job-spec), so a
// field the API adds appears here with no portal code. Every control is labelled, its
// description is its hint, and an empty control leaves its field out (the API's default
// applies). The browser's own validation is off: the API checks the spec, and the page
// shows its words, the same the CLI prints.
import { el } from "./portal.js";

let serial = 0;
const nextId = (path) => `spec-${path.join("-")}-${(serial += 1)}`;
const humanize = (name) => {
  const words = name.replace(/_/g, " ");
  return words.charAt(0).toUpperCase() + words.slice(1);
};
const isBlank = (v) => v === undefined || v === "" || (Array.isArray(v) && !v.length)
  || (v && typeof v === "object" && !Array.isArray(v) && !Object.keys(v).length);

export class SchemaForm {
  /** The form of `schema` inside `container`. */
  constructor(schema, container) {
    this.defs = schema.$defs || {};
    this.uploads = [];  // { file, source (input), dest (input) } of each chosen file
    this.root = this.field("spec", schema, ["spec"], true, 0);
    container.replaceChildren(this.root.element);
  }

  /** The spec the form describes now (fields left empty are left out). */
  value() { return this.root.value() || {}; }

  resolve(schema) {
    let found = schema || {};
    const outer = { ...found };
    while (found.$ref) found = this.defs[found.$ref.split("/").pop()] || {};
    delete outer.$ref;
    return { ...found, ...outer };
  }

  field(name, raw, path, required, depth) {
    // The label: the property's own title, else its name in words (a referenced
    // definition's title is a type's name, such as OutputsMode).
    let s = { ...this.resolve(raw), title: (raw && raw.title) || humanize(name) };
    if (s.anyOf) {
      const choices = s.anyOf.map((c) => this.resolve(c)).filter((c) => c.type !== "null");
      if (choices.length !== 1) return this.jsonField(name, s, path);
      s = { ...choices[0], title: s.title || choices[0].title,
            description: s.description || choices[0].description, default: s.default };
    }
    if (s.enum) return this.selectField(name, s, path, required);
    if (s.type === "object" && s.properties) return this.objectField(name, s, path, depth);
    if (s.type === "object") return this.mapField(name, s, path);
    if (s.type === "array") {
      const items = this.resolve(s.items);
      if (items.type === "object" && items.properties) return this.listField(name, s, items, path, depth);
      if (items.enum) return this.choicesField(name, s, items, path);
      return this.linesField(name, s, path);
    }
    if (s.type === "boolean") return this.booleanField(name, s, path);
    return this.textField(name, s, path, required);
  }

  labelled(name, s, path, control, required) {
    const id = nextId(path);
    control.id = id;
    control.name = path.slice(1).join(".");
    const parts = [el("label", { for: id }, s.title || name, required ? " (required)" : "")];
    if (s.description) {
      const hint = el("span", { class: "hint", id: `${id}-hint` }, s.description);
      control.setAttribute("aria-describedby", hint.id);
      parts.push(control, hint);
    } else {
      parts.push(control);
    }
    return el("div", { class: "field", "data-field": control.name }, ...parts);
  }

  textField(name, s, path, required) {
    const long = (s.maxLength || 0) > 8192;
    const control = long ? el("textarea", { rows: 6 }) : el("input", { type: "text" });
    if (s.type === "integer" || s.type === "number") control.setAttribute("inputmode", "numeric");
    if (s.default !== undefined && s.default !== null && typeof s.default !== "object") {
      control.placeholder = String(s.default);
    }
    const wrap = this.labelled(name, s, path, control, required);
    return {
      element: wrap, control,
      value: () => {
        const text = control.value;
        if (text.trim() === "") return undefined;
        // A number field takes any text: the API accepts other forms (walltime 00:10:00)
        // and words the error for the rest.
        if ((s.type === "integer" || s.type === "number") && /^-?\d+(\.\d+)?$/.test(text.trim())) {
          return Number(text.trim());
        }
        return text;
      },
    };
  }

  selectField(name, s, path, required) {
    const control = el("select", {},
      required ? null : el("option", { value: "" },
        s.default !== undefined && s.default !== null ? `default (${s.default})` : "none"),
      ...s.enum.map((v) => el("option", { value: String(v) }, String(v))));
    return { element: this.labelled(name, s, path, control, required),
             value: () => (control.value === "" ? undefined : control.value) };
  }

  booleanField(name, s, path) {
    const control = el("input", { type: "checkbox", checked: s.default === true });
    return { element: this.labelled(name, s, path, control, false),
             value: () => (control.checked === (s.default === true) ? undefined : control.checked) };
  }

  linesField(name, s, path) {
    const control = el("textarea", { rows: 3 });
    const hint = { ...s, description: `${s.description ? `${s.description} ` : ""}One a line.` };
    return { element: this.labelled(name, hint, path, control, false),
             value: () => {
               const lines = control.value.split("\n").filter((line) => line !== "");
               return lines.length ? lines : undefined;
             } };
  }

  choicesField(name, s, items, path) {
    const boxes = items.enum.map((v) => el("input", { type: "checkbox", value: String(v),
                                                      id: nextId([...path, String(v)]) }));
    const element = el("fieldset", { class: "choices", "data-field": path.slice(1).join(".") },
      el("legend", {}, s.title || name),
      ...boxes.map((box) => el("span", {}, box, el("label", { for: box.id }, box.value))));
    return { element, value: () => {
      const chosen = boxes.filter((b) => b.checked).map((b) => b.value);
      return chosen.length ? chosen : undefined;
    } };
  }

  mapField(name, s, path) {
    const control = el("textarea", { rows: 3, placeholder: "KEY=value" });
    const hint = { ...s, description: `${s.description ? `${s.description} ` : ""}KEY=value, one a line.` };
    return { element: this.labelled(name, hint, path, control, false),
             value: () => {
               const map = {};
               for (const line of control.value.split("\n")) {
                 if (!line.trim()) continue;
                 const at = line.indexOf("=");
                 // A line without '=' goes as a key with an empty value: the API says why.
                 map[at < 0 ? line : line.slice(0, at)] = at < 0 ? "" : line.slice(at + 1);
               }
               return isBlank(map) ? undefined : map;
             } };
  }

  jsonField(name, s, path) {
    const control = el("textarea", { rows: 2, placeholder: "JSON" });
    return { element: this.labelled(name, s, path, control, false),
             value: () => {
               if (!control.value.trim()) return undefined;
               try { return JSON.parse(control.value); } catch { return control.value; }
             } };
  }

  objectField(name, s, path, depth) {
    const required = new Set(s.required || []);
    const fields = Object.entries(s.properties).map(([key, sub]) =>
      [key, this.field(key, sub, [...path, key], required.has(key), depth + 1)]);
    const byName = Object.fromEntries(fields);
    const source = byName.source;
    // A file source that may be an upload: a file chooser beside it (uploaded on submit).
    if (source && source.control && /upload:/.test(s.properties.source.description || "")) {
      const chooser = el("input", { type: "file", id: nextId([...path, "file"]) });
      const item = { file: null, source: source.control, dest: byName.dest && byName.dest.control };
      chooser.addEventListener("change", () => { item.file = chooser.files[0] || null; });
      this.uploads.push(item);
      source.element.append(el("label", { for: chooser.id, class: "or" }, "or upload a file"),
                            chooser);
      item.chooser = chooser;
      byName.upload = item;
    }
    const body = fields.map(([, f]) => f.element);
    const value = () => {
      const out = {};
      for (const [key, f] of fields) {
        const v = f.value();
        if (!isBlank(v)) out[key] = v;
      }
      return isBlank(out) ? undefined : out;
    };
    if (depth === 0) return { element: el("div", { class: "spec-fields" }, ...body), value };
    const element = el("details", { class: "group", "data-field": path.slice(1).join(".") },
      el("summary", {}, s.title || name),
      s.description ? el("p", { class: "hint" }, s.description) : null, ...body);
    return { element, value, fields: byName };
  }

  listField(name, s, items, path, depth) {
    const entries = [];
    const list = el("div", { class: "items" });
    const add = el("button", { type: "button" }, `Add ${(items.title || name).toLowerCase()}`);
    const addItem = () => {
      const index = entries.length;
      const f = this.objectField(`${items.title || name} ${index + 1}`, items,
                                 [...path, String(index)], depth + 1);
      f.element.open = true;
      const remove = el("button", { type: "button", class: "remove" }, "Remove");
      const entry = { f, box: el("div", { class: "item" }, f.element, remove) };
      remove.addEventListener("click", () => {
        entries.splice(entries.indexOf(entry), 1);
        this.uploads = this.uploads.filter((u) => u !== f.fields.upload);
        entry.box.remove();
        add.focus();
      });
      entries.push(entry);
      list.append(entry.box);
      const first = f.element.querySelector("input, select, textarea");
      if (first) first.focus();
    };
    add.addEventListener("click", addItem);
    const element = el("details", { class: "group", "data-field": path.slice(1).join(".") },
      el("summary", {}, s.title || name),
      s.description ? el("p", { class: "hint" }, s.description) : null, list, add);
    return { element, addItem, value: () => {
      const values = entries.map((e) => e.f.value() || {});
      return values.length ? values : undefined;
    } };
  }
}
