// The audit log: every event with who did it and from where (REST, CLI, UI, MCP).

import { get, query } from "../api.js";
import { errorText, h, when, fill } from "../dom.js";

// 30 rows a page, each payload folded into one line: the page stays a few screens tall.
const PAGE = 30;
const SUMMARY_KEYS = ["kind", "target_type", "target_id", "cluster", "name", "stage", "message"];

function payloadSummary(payload) {
  const p = payload || {};
  const parts = SUMMARY_KEYS.filter((k) => typeof p[k] === "string" && p[k]).map((k) => `${k} ${p[k]}`);
  return parts.join(" · ") || `${Object.keys(p).length} field${Object.keys(p).length === 1 ? "" : "s"}`;
}

export async function render(main) {
  main.append(h("h1", {}, "Audit log"));
  const principal = h("input", { id: "audit-principal", name: "principal", autocomplete: "off" });
  const body = h("tbody");
  const message = h("p", { role: "status" });
  const more = h("button", { type: "button", class: "secondary", hidden: true }, "Load more");
  let after = 0;

  async function load(reset) {
    if (reset) {
      after = 0;
      fill(body);
    }
    try {
      const rows = await get(`/audit${query({ after, limit: PAGE, principal: principal.value.trim() })}`);
      for (const r of rows) {
        after = Math.max(after, r.seq);
        body.append(
          h(
            "tr",
            {},
            h("td", { "data-label": "Seq" }, String(r.seq)),
            h("td", { "data-label": "When" }, when(r.occurred_at)),
            h("th", { scope: "row", "data-label": "Event" }, r.type),
            h("td", { "data-label": "By" }, `${r.principal} (${r.source})`),
            h(
              "td",
              { "data-label": "Operation" },
              r.operation_id ? h("a", { href: `#/operations/${r.operation_id}` }, r.operation_id.slice(0, 8)) : "",
            ),
            h("td", { "data-label": "Detail" },
              h("details", { class: "payload" },
                h("summary", {}, payloadSummary(r.payload)),
                h("pre", {}, JSON.stringify(r.payload, null, 2)))),
          ),
        );
      }
      more.hidden = rows.length < PAGE;
      message.textContent = body.children.length ? "" : "No audit entries.";
    } catch (error) {
      message.textContent = errorText(error);
    }
  }

  const filter = h(
    "form",
    { class: "inline", role: "search", "aria-label": "Filter the audit log" },
    h("label", { for: "audit-principal" }, "Principal"),
    principal,
    h("button", { type: "submit", class: "secondary" }, "Filter"),
  );
  filter.addEventListener("submit", (event) => {
    event.preventDefault();
    load(true);
  });
  more.addEventListener("click", () => load(false));
  main.append(
    filter,
    h(
      "div",
      { class: "table-wrap" },
      h(
        "table",
        { class: "list compact" },
        h("caption", { class: "visually-hidden" }, "Audit log, oldest first"),
        h("thead", {}, h("tr", {}, ...["Seq", "When", "Event", "By", "Operation", "Detail"].map((c) => h("th", { scope: "col" }, c)))),
        body,
      ),
    ),
    message,
    more,
  );
  await load(true);
}
