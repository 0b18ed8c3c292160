// Operations: the list (newest first, paged by cursor, the rows in view drawn) and one
// operation's live progress panel.

import { get } from "../api.js";
import { badge, h, when } from "../dom.js";
import { operationWords } from "../operation_words.js";
import { pagedTable } from "../paged_table.js";
import { onChange } from "../store.js";
import { progressPanel } from "./progress.js";

export async function render(main, [id]) {
  if (id) return detail(main, id);
  main.append(h("h1", {}, "Operations"));
  const kind = h("input", { id: "op-target", name: "target", autocomplete: "off", placeholder: "any" });
  const filter = h(
    "form",
    { class: "inline", role: "search", "aria-label": "Filter operations" },
    h("label", { for: "op-target" }, "Target contains"),
    kind,
    h("button", { type: "submit", class: "secondary" }, "Filter"),
  );
  // newest first, 200 a page by cursor as the list scrolls; only the rows in view are drawn
  const table = pagedTable({
    path: "/operations",
    caption: "Operations, newest first",
    label: "Operations list",
    noun: "operations",
    empty: "No operations.",
    most: 500, // GET /operations answers at most 500 a page
    columns: ["Operation", "Target", "Status", "By", "Created"],
    key: (o) => o.id,
    row: (o) => h(
      "tr",
      { "data-operation": o.id },
      h("th", { scope: "row", "data-label": "Operation" }, h("a", { href: `#/operations/${o.id}`, title: o.kind }, operationWords(o))),
      h("td", { "data-label": "Target" }, `${o.target_type} ${o.target_id}`),
      h("td", { "data-label": "Status" }, badge(o.status)),
      h("td", { "data-label": "By" }, `${o.principal} (${o.source})`),
      h("td", { "data-label": "Created" }, when(o.created_at)),
    ),
  });
  filter.addEventListener("submit", (event) => {
    event.preventDefault();
    const needle = kind.value.trim().toLowerCase();
    // the pages loaded, and the next ones while the matches do not fill the view
    table.filter(needle
      ? (o) => `${o.target_type} ${o.target_id} ${o.kind} ${operationWords(o)}`.toLowerCase().includes(needle)
      : null);
  });
  main.append(filter, table.element);
  // the list follows every operation through the live store
  table.load();
  const stop = onChange(table.reread);
  return () => {
    stop();
    table.stop();
  };
}

function detail(main, id) {
  main.append(
    h("p", { class: "crumbs" }, h("a", { href: "#/operations" }, "Operations"), ` / ${id}`),
    h("h1", {}, "Operation"),
  );
  const panel = progressPanel(id);
  const requestBox = h("details", { class: "card" }, h("summary", {}, "Request and result"));
  main.append(panel.element, requestBox);
  get(`/operations/${id}`)
    .then((op) => {
      requestBox.append(
        h("h3", {}, "Request (only the fields sent)"),
        h("pre", {}, JSON.stringify(op.request, null, 2)),
        op.result ? [h("h3", {}, "Result"), h("pre", {}, JSON.stringify(op.result, null, 2))] : null,
      );
    })
    .catch(() => {});
  panel.focus();
  return () => panel.stop();
}
