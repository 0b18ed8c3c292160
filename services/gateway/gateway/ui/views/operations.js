// Operations: the list (newest first) and one operation's live progress panel.

import { get, query } from "../api.js";
import { badge, errorText, h, when, fill } from "../dom.js";
import { operationWords } from "../operation_words.js";
import { watch } from "../store.js";
import { progressPanel } from "./progress.js";

export async function render(main, [id]) {
  if (id) return detail(main, id);
  main.append(h("h1", {}, "Operations"));
  const kind = h("input", { id: "op-target", name: "target", autocomplete: "off", placeholder: "any" });
  const body = h("tbody");
  const message = h("p", { role: "status" });
  const filter = h(
    "form",
    { class: "inline", role: "search", "aria-label": "Filter operations" },
    h("label", { for: "op-target" }, "Target contains"),
    kind,
    h("button", { type: "submit", class: "secondary" }, "Filter"),
  );
  let items = [];
  function paint() {
    const needle = kind.value.trim().toLowerCase();
    fill(body, 
      ...items
        .filter((o) => !needle || `${o.target_type} ${o.target_id} ${o.kind} ${operationWords(o)}`.toLowerCase().includes(needle))
        .map((o) =>
          h(
            "tr",
            {},
            h("th", { scope: "row", "data-label": "Operation" }, h("a", { href: `#/operations/${o.id}`, title: o.kind }, operationWords(o))),
            h("td", { "data-label": "Target" }, `${o.target_type} ${o.target_id}`),
            h("td", { "data-label": "Status" }, badge(o.status)),
            h("td", { "data-label": "By" }, `${o.principal} (${o.source})`),
            h("td", { "data-label": "Created" }, when(o.created_at)),
          ),
        ),
    );
    message.textContent = body.children.length ? "" : "No operations.";
  }
  filter.addEventListener("submit", (event) => {
    event.preventDefault();
    paint();
  });
  main.append(
    filter,
    h(
      "div",
      { class: "table-wrap" },
      h(
        "table",
        { class: "list" },
        h("caption", { class: "visually-hidden" }, "Operations, newest first"),
        h("thead", {}, h("tr", {}, ...["Operation", "Target", "Status", "By", "Created"].map((c) => h("th", { scope: "col" }, c)))),
        body,
      ),
    ),
    message,
  );
  // the list follows every operation through the live store
  return watch(`/operations${query({ limit: 100 })}`, (answer) => {
    items = answer.items || [];
    paint();
  }, { failed: (error) => { message.textContent = errorText(error); } });
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
