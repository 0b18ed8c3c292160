// Model downloads: pull a Hugging Face model into the cluster's bucket (a Kubernetes Job that
// writes to /s3/<target>); a gated model's token is stored as a Secret first and never shown
// again. The downloads of the cluster follow the live store.

import { post } from "../api.js";
import {
  announce, badge, clearErrors, field, fill, formError, h, operationLink, section, showErrors, when,
} from "../dom.js";
import { watch } from "../store.js";

export async function render(main, [cluster]) {
  const base = `/clusters/${encodeURIComponent(cluster)}`;
  const status = h("div", { class: "notice", role: "status" });
  main.append(
    h("p", { class: "crumbs" }, h("a", { href: "#/clusters" }, "Clusters"), " / ",
      h("a", { href: `#/clusters/${encodeURIComponent(cluster)}` }, cluster), " / Models"),
    h("h1", {}, "Model downloads"),
    status,
  );
  const name = h("input", { name: "name", autocomplete: "off", spellcheck: "false" });
  const repo = h("input", { name: "repo_id", autocomplete: "off", spellcheck: "false", placeholder: "Qwen/Qwen2.5-0.5B" });
  const revision = h("input", { name: "revision", value: "main", autocomplete: "off", spellcheck: "false" });
  const target = h("input", { name: "target", autocomplete: "off", spellcheck: "false" });
  const token = h("input", { name: "token", type: "password", autocomplete: "off" });
  const form = h("form", { novalidate: true, "aria-label": "Download a model" },
    h("div", { class: "row" },
      field("Download name", name, { field: "name" }),
      field("Hugging Face model", repo, { field: "repo_id", hint: "owner/name, as on huggingface.co" })),
    h("div", { class: "row" },
      field("Revision", revision, { field: "revision" }),
      field("Folder in the bucket (optional)", target, { field: "target", hint: "models/<model name> when empty; mounted at /s3 on the nodes" })),
    field("Hugging Face token (gated models only)", token, { field: "token", hint: "Stored as the cluster's hf-token Secret; never shown again." }),
    formError(),
    h("button", { type: "submit" }, "Download"));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearErrors(form);
    const spec = { name: name.value.trim(), repo_id: repo.value.trim() };
    if (revision.value.trim() && revision.value.trim() !== "main") spec.revision = revision.value.trim();
    if (target.value.trim()) spec.target = target.value.trim();
    const send = form.querySelector("button[type=submit]");
    send.disabled = true; // one request at a time: a second click is not a second download
    fill(status, `Asking for the download of ${spec.repo_id}…`);
    try {
      if (token.value) {
        const stored = await post(`${base}/secrets/hf-token`, { token: token.value });
        spec.token_secret = stored.secret;
        token.value = "";
      }
      const accepted = await post(`${base}/model-downloads`, spec);
      fill(status, `Downloading ${spec.repo_id}: `, operationLink(accepted.operation_id, "follow the operation"));
      announce(`Downloading ${spec.repo_id}`);
    } catch (error) {
      fill(status);
      showErrors(form, error);
    } finally {
      send.disabled = false;
    }
  });

  const body = h("tbody");
  main.append(
    section("Download a model from Hugging Face", form),
    section("Downloads on this cluster", h("div", { class: "table-wrap" }, h("table", { class: "list" },
      h("caption", { class: "visually-hidden" }, "Model downloads"),
      h("thead", {}, h("tr", {}, ...["Download", "Model", "Status", "Started"].map((c) => h("th", { scope: "col" }, c)))),
      body))),
  );
  // a download is a job of recipe model-download: the jobs list, filtered
  return watch(`${base}/jobs?recipe=model-download&limit=1000`, (jobs) => {
    const downloads = jobs.filter((j) => j.recipe === "model-download");
    fill(body, ...downloads.map((j) => h("tr", { "data-download": j.name },
      h("th", { scope: "row", "data-label": "Download" }, h("a", { href: `#/clusters/${encodeURIComponent(cluster)}/jobs/${encodeURIComponent(j.name)}` }, j.name)),
      h("td", { "data-label": "Model" }, `${j.spec.repo_id}${j.spec.revision && j.spec.revision !== "main" ? ` @ ${j.spec.revision}` : ""}`),
      h("td", { "data-label": "Status" }, badge(j.status)),
      h("td", { "data-label": "Started" }, when(j.created_at)))));
    if (!downloads.length) fill(body, h("tr", {}, h("td", { colspan: "4" }, "No model downloads yet.")));
  }, { cluster, failed: (error) => { status.textContent = error.message; } });
}
