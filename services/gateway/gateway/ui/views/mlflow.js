// MLflow: create a SageMaker managed MLflow tracking server (its ARN is a training job's
// tracking URI) and look one up by name. The API lists no servers: the page shows the ones
// created or looked up here, read again on each event (the live store).

import { get, post } from "../api.js";
import {
  announce, badge, clearErrors, field, fill, formError, h, operationLink, section, showErrors,
} from "../dom.js";
import { onChange } from "../store.js";

export async function render(main) {
  const status = h("div", { class: "notice", role: "status" });
  main.append(h("h1", {}, "MLflow tracking servers"), status);
  const known = new Set();
  const body = h("tbody");

  async function paint() {
    const rows = await Promise.all([...known].map(async (name) => {
      try {
        return await get(`/mlflow/tracking-servers/${encodeURIComponent(name)}`);
      } catch (error) {
        return { name, status: error.status === 404 ? "not found" : "unknown", message: error.message };
      }
    }));
    fill(body, ...rows.map((s) => h("tr", { "data-server": s.name },
      h("th", { scope: "row", "data-label": "Server" }, s.name),
      h("td", { "data-label": "Status" }, badge(s.status)),
      h("td", { "data-label": "Tracking URI", class: "wrap" }, s.tracking_uri || s.arn || s.message || ""),
      h("td", { "data-label": "Artifacts", class: "wrap" }, s.artifact_store_uri || ""))));
    if (!rows.length) fill(body, h("tr", {}, h("td", { colspan: "4" }, "Create a server or look one up by name.")));
  }

  const name = h("input", { name: "name", autocomplete: "off", spellcheck: "false" });
  const store = h("input", { name: "artifact_store_uri", autocomplete: "off", spellcheck: "false", placeholder: "s3://my-bucket/mlflow" });
  const role = h("input", { name: "role_arn", autocomplete: "off", spellcheck: "false", placeholder: "arn:aws:iam::123456789012:role/mlflow" });
  const size = h("select", { name: "size" }, ...["Small", "Medium", "Large"].map((s) => h("option", { value: s }, s)));
  const form = h("form", { novalidate: true, "aria-label": "Create a tracking server" },
    h("div", { class: "row" },
      field("Server name", name, { field: "name" }),
      field("Size", size, { field: "size" })),
    field("Artifact store", store, { field: "artifact_store_uri", hint: "An S3 URI the server writes runs' artifacts to." }),
    field("Role ARN", role, { field: "role_arn", hint: "The IAM role the server uses to reach the artifact store." }),
    formError(),
    h("button", { type: "submit" }, "Create server"));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearErrors(form);
    const spec = { name: name.value.trim(), artifact_store_uri: store.value.trim(), role_arn: role.value.trim() };
    if (size.value !== "Small") spec.size = size.value;
    try {
      const accepted = await post("/mlflow/tracking-servers", spec);
      known.add(spec.name);
      fill(status, `Creating ${spec.name}: `, operationLink(accepted.operation_id, "follow the operation"));
      announce(`Creating ${spec.name}`);
      paint();
    } catch (error) {
      showErrors(form, error);
    }
  });

  const lookup = h("input", { name: "lookup", autocomplete: "off", spellcheck: "false" });
  const lookupForm = h("form", { novalidate: true, "aria-label": "Look up a tracking server" },
    field("Server name to look up", lookup), h("button", { type: "submit", class: "secondary" }, "Look up"));
  lookupForm.addEventListener("submit", (event) => {
    event.preventDefault();
    if (!lookup.value.trim()) return;
    known.add(lookup.value.trim());
    paint();
  });

  main.append(
    section("Create a tracking server", form),
    section("Tracking servers", lookupForm, h("div", { class: "table-wrap" }, h("table", { class: "list" },
      h("caption", { class: "visually-hidden" }, "Tracking servers"),
      h("thead", {}, h("tr", {}, ...["Server", "Status", "Tracking URI", "Artifacts"].map((c) => h("th", { scope: "col" }, c)))),
      body))),
  );
  paint();
  return onChange(paint);
}
