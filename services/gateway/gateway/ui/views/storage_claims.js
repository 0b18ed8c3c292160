// Storage claims on the cluster page: the cluster's own bucket (s3-claim) and every added S3
// bucket or FSx for Lustre file system, each a claim workloads mount by name. Adding and
// removing show the operation's plan first (dry run), then run it; a claim a workload mounts
// cannot be removed (the API names the workloads).

import { del, post } from "../api.js";
import { badge, clearErrors, confirmAction, errorText, field, fill, formError, h, operationLink, showErrors } from "../dom.js";
import { dryRun, planLines } from "../plan.js";
import { watch } from "../store.js";

const what = (c) => c.bucket || c.file_system_id || "";

function body(form) {
  const v = (n) => form.elements[n].value.trim();
  const claim = v("claim");
  const kind = v("source");
  if (kind === "s3") return { kind: "s3", claim, bucket: v("bucket") };
  if (kind === "s3-new") return { kind: "s3", claim, bucket: v("bucket"), create: true };
  if (kind === "fsx") return { kind: "fsx", claim, file_system_id: v("file_system_id") };
  const out = { kind: "fsx", claim, storage_capacity_gib: Number(v("storage_capacity_gib")), deployment_type: v("deployment_type") };
  if (v("per_unit_storage_throughput")) out.per_unit_storage_throughput = Number(v("per_unit_storage_throughput"));
  return out;
}

// `status`: the page's one status line, where an operation's start is said.
export function storageClaimsPanel(name, status) {
  const path = `/clusters/${encodeURIComponent(name)}/storage`;
  const list = h("div", {}, h("p", {}, "Reading storage claims…"));
  const input = (n, attrs = {}) => h("input", { name: n, autocomplete: "off", spellcheck: "false", ...attrs });
  const source = h("select", { name: "source" },
    h("option", { value: "s3" }, "Existing S3 bucket"),
    h("option", { value: "s3-new" }, "New S3 bucket"),
    h("option", { value: "fsx" }, "Existing FSx for Lustre"),
    h("option", { value: "fsx-new" }, "New FSx for Lustre"));
  const deployment = h("select", { name: "deployment_type" },
    ...["PERSISTENT_2", "PERSISTENT_1", "SCRATCH_2", "SCRATCH_1"].map((t) => h("option", { value: t }, t)));
  const s3Fields = h("div", {}, field("Bucket", input("bucket"), { field: "bucket" }));
  const fsxFields = h("div", { hidden: true }, field("File system id", input("file_system_id", { placeholder: "fs-…" }), { field: "file_system_id" }));
  const newFsxFields = h("div", { hidden: true },
    field("Capacity (GiB)", input("storage_capacity_gib", { inputmode: "numeric", value: "1200" }), { field: "storage_capacity_gib", hint: "1200, 2400, or a multiple of 2400 (3600 for SCRATCH_1)" }),
    field("Deployment type", deployment, { field: "deployment_type" }),
    field("Throughput (MB/s per TiB)", input("per_unit_storage_throughput", { inputmode: "numeric" }), { field: "per_unit_storage_throughput", hint: "PERSISTENT_2: 125, 250, 500, 1000; PERSISTENT_1: 50, 100, 200; none for SCRATCH" }));
  source.addEventListener("change", () => {
    s3Fields.hidden = !source.value.startsWith("s3");
    fsxFields.hidden = source.value !== "fsx";
    newFsxFields.hidden = source.value !== "fsx-new";
  });
  const form = h("form", { novalidate: true, "aria-label": "Add a storage claim", class: "inline-form" },
    field("Claim name", input("claim"), { field: "claim", hint: "what jobs and endpoints mount, e.g. datasets" }),
    field("Source", source), s3Fields, fsxFields, newFsxFields,
    formError(), h("button", { type: "submit", class: "secondary" }, "Add storage"));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearErrors(form);
    const change = body(form);
    try {
      const plan = await dryRun("POST", path, change);
      if (!await confirmAction(`Add storage claim ${change.claim}?`, "Add", planLines(plan))) return;
      const accepted = await post(path, change);
      fill(status, `Add storage ${change.claim}: `, operationLink(accepted.operation_id, "follow the operation"));
      form.reset();
    } catch (error) {
      showErrors(form, error);
    }
  });

  async function remove(claim) {
    const target = `${path}/${encodeURIComponent(claim)}`;
    try {
      const plan = await dryRun("DELETE", target);
      if (!await confirmAction(`Remove storage claim ${claim}?`, "Remove", planLines(plan))) return;
      const accepted = await del(target);
      fill(status, `Remove storage ${claim}: `, operationLink(accepted.operation_id, "follow the operation"));
    } catch (error) {
      status.textContent = `${claim}: ${errorText(error)}`;
    }
  }

  function paint(claims) {
    fill(list, claims.length
      ? h("div", { class: "table-wrap" }, h("table", { class: "list storage-claims" },
        h("caption", { class: "visually-hidden" }, "Storage claims"),
        h("thead", {}, h("tr", {}, ...["Claim", "Kind", "Source", "Bucket or file system", "Status", "Actions"].map((c) => h("th", { scope: "col" }, c)))),
        h("tbody", {}, ...claims.map((c) => h("tr", {},
          h("td", { "data-label": "Claim" }, h("code", {}, c.claim)),
          h("td", { "data-label": "Kind" }, c.kind === "fsx" ? "FSx for Lustre" : "S3"),
          h("td", { "data-label": "Source" }, c.source === "existing" ? "existing (kept)" : c.source),
          h("td", { "data-label": "Bucket or file system", class: "wrap" }, what(c),
            c.details && c.details.mount_name ? ` (mount ${c.details.mount_name})` : ""),
          h("td", { "data-label": "Status" }, badge(c.status)),
          h("td", {}, c.source === "default" ? h("span", { class: "hint" }, "goes with the cluster")
            : h("button", { type: "button", class: "small secondary", onclick: () => remove(c.claim) }, "Remove")))))))
      : h("p", {}, "No storage claims."));
  }

  const element = h("section", { class: "card wide storage-claims-card", "aria-labelledby": "storage-claims-title" },
    h("h2", { id: "storage-claims-title" }, "Storage claims"),
    h("p", { class: "hint" }, "Jobs, Ray jobs, model downloads and endpoints mount these by claim name (volumes: claim and mount path); s3-claim is always at /s3."),
    list, form);
  const stop = watch(path, paint, { cluster: name, failed: (error) => fill(list, h("p", { class: "form-error" }, errorText(error))) });
  return { element, stop };
}
