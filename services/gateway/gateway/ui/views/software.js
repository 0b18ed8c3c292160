// Software update of a cluster: move the nodes to the latest HyperPod release (or a given AMI)
// with a rolling deployment (nodes per batch, pause between batches), confirmed with the
// dry-run plan since updated nodes leave service while they are replaced.

import { get, post } from "../api.js";
import {
  announce, clearErrors, confirmAction, field, fill, formError, h, operationLink, section, showErrors,
} from "../dom.js";
import { dryRun, planLines } from "../plan.js";

export async function render(main, [cluster]) {
  const base = `/clusters/${encodeURIComponent(cluster)}`;
  const status = h("div", { class: "notice", role: "status" });
  main.append(
    h("p", { class: "crumbs" }, h("a", { href: "#/clusters" }, "Clusters"), " / ",
      h("a", { href: `#/clusters/${encodeURIComponent(cluster)}` }, cluster), " / Software update"),
    h("h1", {}, "Software update"),
    status,
  );
  const groups = await get(`${base}/instance-groups?limit=1000`).catch(() => []);
  const boxes = groups.map((g) => h("input", { type: "checkbox", name: "instance_groups", value: g.name, checked: true }));
  const image = h("input", { name: "image_id", autocomplete: "off", spellcheck: "false", placeholder: "latest" });
  const batchType = h("select", { name: "batch_type" },
    h("option", { value: "count" }, "nodes"), h("option", { value: "percentage" }, "% of the group"));
  const batch = h("input", { name: "batch_size", type: "number", min: "1", value: "1", inputmode: "numeric" });
  const wait = h("input", { name: "wait_interval_seconds", type: "number", min: "0", max: "3600", value: "0", inputmode: "numeric" });
  const form = h("form", { novalidate: true, "aria-label": "Update the nodes' software" },
    h("fieldset", { "data-field": "instance_groups" }, h("legend", {}, "Instance groups"),
      ...groups.map((g, i) => h("label", { class: "check" }, boxes[i], ` ${g.name} (${g.count} × ${g.instance_type})`))),
    field("Image (AMI id)", image, { field: "image_id", hint: "The latest HyperPod release when empty." }),
    h("div", { class: "row" },
      field("Batch size", batch, { field: "batch_size.value" }),
      field("Batch size in", batchType, { field: "batch_size.type" }),
      field("Pause between batches (seconds)", wait, { field: "wait_interval_seconds" })),
    formError(),
    h("button", { type: "submit" }, "Update software"));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearErrors(form);
    const chosen = boxes.filter((b) => b.checked).map((b) => b.value);
    const body = { batch_size: { type: batchType.value, value: Number(batch.value) }, wait_interval_seconds: Number(wait.value || 0) };
    if (chosen.length !== boxes.length) body.instance_groups = chosen;
    if (image.value.trim()) body.image_id = image.value.trim();
    try {
      const plan = await dryRun("POST", `${base}/software-update`, body);
      const ok = await confirmAction(
        `Update the software of ${chosen.length === boxes.length ? "every group" : chosen.join(", ")} on ${cluster}? Nodes are replaced batch by batch.`,
        "Update software",
        planLines(plan),
      );
      if (!ok) return;
      const accepted = await post(`${base}/software-update`, body);
      fill(status, "Software update: ", operationLink(accepted.operation_id, "follow the operation"));
      announce("Software update started");
    } catch (error) {
      showErrors(form, error);
    }
  });
  main.append(section("Rolling update", form));
}
