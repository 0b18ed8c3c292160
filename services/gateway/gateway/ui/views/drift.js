// Drift on the cluster page: where the record and AWS/Kubernetes differ (the drift watcher's
// DriftDetected), each with its two ways out: accept the actual value into the record, or
// restore the recorded one (its operation's plan shown first). Hidden while nothing differs.

import { post } from "../api.js";
import { confirmAction, errorText, fill, h, operationLink } from "../dom.js";
import { dryRun, planLines } from "../plan.js";
import { watch } from "../store.js";

const shown = (v) => (v === null || v === undefined ? "none" : typeof v === "object" ? JSON.stringify(v) : String(v));

// `status`: the page's one status line, where the outcome of accept and restore is said.
export function driftPanel(name, status) {
  const base = `/clusters/${encodeURIComponent(name)}`;
  const box = h("div");
  const element = h("section", { class: "card wide drift", "aria-labelledby": "drift-title", hidden: true },
    h("h2", { id: "drift-title" }, "Drifted from the record"),
    h("p", { class: "hint" }, "Someone changed these in AWS or Kubernetes outside Hyperpilot. Accept the actual value into the record, or restore the recorded one (its plan is shown first)."),
    box);

  async function accept(field) {
    try {
      await post(`${base}/drift/accept`, { fields: [field] });
      status.textContent = `${field}: the actual value is now the record.`;
    } catch (error) {
      status.textContent = `${field}: ${errorText(error)}`;
    }
  }

  async function restore(field) {
    try {
      const plan = await dryRun("POST", `${base}/drift/restore`, { field });
      if (!await confirmAction(`Restore the recorded ${field}?`, "Restore", planLines(plan))) return;
      const accepted = await post(`${base}/drift/restore`, { field });
      fill(status, `Restore ${field}: `, operationLink(accepted.operation_id, "follow the operation"));
    } catch (error) {
      status.textContent = `${field}: ${errorText(error)}`;
    }
  }

  function paint(drift) {
    element.hidden = !drift.drifted;
    fill(box, h("div", { class: "table-wrap" }, h("table", { class: "list" },
      h("caption", { class: "visually-hidden" }, "Drifted fields"),
      h("thead", {}, h("tr", {}, ...["Field", "Recorded", "Actual", "Actions"].map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, ...drift.differences.map((d) => h("tr", {},
        h("td", {}, d.field), h("td", {}, shown(d.recorded)), h("td", {}, shown(d.actual)),
        h("td", {},
          h("button", { type: "button", class: "secondary", onclick: () => accept(d.field) }, "Accept actual"), " ",
          h("button", { type: "button", onclick: () => restore(d.field) }, "Restore recorded"))))))));
  }

  const stop = watch(`${base}/drift`, paint, { cluster: name });
  return { element, stop };
}
