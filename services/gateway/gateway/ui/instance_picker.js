// The instance-type picker of the create form, the add-group form and the endpoint form: a
// <select> grouped by accelerator (CPU-only types last), each type with its GPUs, GPU memory,
// vCPU, memory and EFA as the API describes them, and a filter by kind instead of every name in
// alphabetical order.

import { field, fill, h } from "./dom.js";
import { describe, summary } from "./instance_types.js";

const KINDS = [
  ["accelerated", "GPU and Trainium"],
  ["GPU", "GPU only"],
  ["Trainium", "Trainium only"],
  ["CPU", "CPU only"],
  ["all", "All types"],
];

const keeps = (kind, t) => kind === "all" || (kind === "accelerated" ? t.kind !== "CPU" : t.kind === kind);

// label: the select's label; fieldName: the API field errors are reported at. Returns
// { select, element, set(types, selected) } where types are the API's instance-type answers.
export function instanceTypePicker(label, fieldName, name = "instance_type") {
  const select = h("select", { name }, h("option", { value: "" }, "Loading instance types…"));
  const kind = h("select", { name: `${name}_kind` }, ...KINDS.map(([value, text]) => h("option", { value }, text)));
  const chosen = h("p", { class: "hint type-summary", "aria-live": "polite" });
  let types = [];
  const byName = new Map();
  const line = (value) => (byName.has(value) ? summary(byName.get(value)) : "");

  function paint(selected) {
    const described = types.filter((t) => keeps(kind.value, t));
    const groups = new Map();
    for (const t of described) {
      const group = t.kind === "CPU" ? "CPU only" : t.kind === "GPU" ? `GPU: ${t.accelerator}` : t.accelerator;
      if (!groups.has(group)) groups.set(group, []);
      groups.get(group).push(t);
    }
    const order = [...groups.keys()].sort((a, b) => (a === "CPU only") - (b === "CPU only") || a.localeCompare(b));
    fill(select, ...order.map((group) => h(
      "optgroup",
      { label: group },
      ...groups.get(group)
        .sort((a, b) => a.family.localeCompare(b.family) || (a.gpus ?? 0) - (b.gpus ?? 0) || (a.vcpu ?? 0) - (b.vcpu ?? 0))
        .map((t) => {
          const text = summary(t);
          return h("option", { value: t.name, selected: t.name === selected }, text ? `${t.name} — ${text}` : t.name);
        }),
    )));
    if (!described.length) fill(select, h("option", { value: "" }, "No instance type of this kind here"));
    chosen.textContent = line(select.value);
  }

  kind.addEventListener("change", () => {
    paint(select.value);
    select.dispatchEvent(new Event("change"));
  });
  select.addEventListener("change", () => {
    chosen.textContent = line(select.value);
  });
  return {
    select,
    element: h("div", { class: "type-picker" },
      field(label, select, { field: fieldName }),
      field("Accelerator filter", kind),
      chosen),
    set(offered, selected) {
      types = offered.map(describe);
      byName.clear();
      for (const t of types) byName.set(t.name, t);
      if (selected && byName.has(selected) && !keeps(kind.value, byName.get(selected))) kind.value = "all";
      paint(selected);
    },
    message(text) {
      types = [];
      byName.clear();
      fill(select, h("option", { value: "" }, text));
      chosen.textContent = "";
    },
  };
}
