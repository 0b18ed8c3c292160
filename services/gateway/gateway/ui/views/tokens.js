// API tokens: the list (names and roles, never the tokens), create or rotate one (its token is
// shown once), revoke one after confirming. Admins only; the list follows the event stream.

import { del, post } from "../api.js";
import {
  announce, badge, clearErrors, confirmAction, errorText, field, formError, h, fill, section,
  showErrors, when,
} from "../dom.js";
import { watch } from "../store.js";

export async function render(main) {
  main.append(h("h1", {}, "API tokens"));
  const status = h("div", { class: "notice", role: "status" });
  const body = h("tbody");
  const table = h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      { class: "list" },
      h("caption", { class: "visually-hidden" }, "API tokens"),
      h("thead", {}, h("tr", {}, ...["Name", "Role", "Created", "State", "Revoke"].map((c) => h("th", { scope: "col" }, c)))),
      body,
    ),
  );

  function paint(tokens) {
    fill(body, ...tokens.map((t) => h(
      "tr",
      { "data-token": t.name },
      h("th", { scope: "row", "data-label": "Name" }, t.name),
      h("td", { "data-label": "Role" }, t.role),
      h("td", { "data-label": "Created" }, when(t.created_at)),
      h("td", { "data-label": "State" }, t.revoked_at ? [badge("revoked"), " ", when(t.revoked_at)] : badge("active")),
      h("td", { "data-label": "Revoke" }, t.revoked_at ? "" : h("button", {
        type: "button",
        class: "small danger",
        "aria-label": `Revoke ${t.name}`,
        onclick: () => revoke(t.name),
      }, "Revoke")),
    )));
  }

  async function revoke(name) {
    const ok = await confirmAction(`Revoke token ${name}?`, `Revoke ${name}`, [
      `${name}: active -> revoked; every request and open stream with it ends at once`,
    ]);
    if (!ok) return;
    try {
      await del(`/tokens/${encodeURIComponent(name)}`);
      status.textContent = `${name} is revoked.`;
      announce(status.textContent);
    } catch (error) {
      status.textContent = errorText(error);
    }
  }

  const name = h("input", { name: "name", autocomplete: "off", spellcheck: "false" });
  const role = h("select", { name: "role" }, ...["viewer", "operator", "admin"].map((r) => h("option", { value: r }, r)));
  const shown = h("div", { "aria-live": "polite" });
  const form = h(
    "form",
    { novalidate: true, "aria-label": "Create a token" },
    h("div", { class: "row" },
      field("Token name", name, { field: "name", hint: "Who holds it, e.g. alice or mcp-agent. An existing name is rotated." }),
      field("Role", role, { field: "role", hint: "viewer reads; operator changes; admin also deletes" })),
    formError(),
    h("button", { type: "submit" }, "Create token"),
    shown,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearErrors(form);
    try {
      const made = await post("/tokens", { name: name.value.trim(), role: role.value });
      fill(shown,
        h("p", {}, `The token of ${made.name} (${made.role}); it is shown only now:`),
        h("pre", { class: "token", tabindex: "0", "aria-label": `Token of ${made.name}` }, made.token));
      announce(`Token ${made.name} created`);
      form.reset();
    } catch (error) {
      showErrors(form, error);
    }
  });

  main.append(status, table, section("Create or rotate a token", form));
  return watch("/tokens?limit=1000", paint, { failed: (error) => { status.textContent = errorText(error); } });
}
