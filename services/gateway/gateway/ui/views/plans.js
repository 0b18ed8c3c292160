// Training plans: the account's reserved capacity (read-only): status, instances in use and
// available, what is reserved where, and when the plan runs. An instance group uses one by its
// ARN (the create form's Capacity: Training plan).

import { get } from "../api.js";
import { badge, errorText, fill, h, when } from "../dom.js";

export async function render(main) {
  const status = h("div", { class: "notice", role: "status" });
  const body = h("tbody");
  const table = h("table", { class: "list" },
    h("caption", { class: "visually-hidden" }, "Training plans"),
    h("thead", {}, h("tr", {}, ...["Plan", "Status", "Instances", "Reserved", "Starts", "Ends"].map((c) => h("th", { scope: "col" }, c)))),
    body);
  main.append(h("h1", {}, "Training plans"), status, h("div", { class: "table-wrap" }, table));
  try {
    const plans = await get("/inspect/training-plans");
    fill(body, ...plans.map((p) => h("tr", { "data-plan": p.name },
      h("th", { scope: "row", "data-label": "Plan" }, p.name, h("br"), h("span", { class: "hint wrap" }, p.arn)),
      h("td", { "data-label": "Status" }, badge(p.status), p.status_message ? h("span", { class: "hint" }, ` ${p.status_message}`) : null),
      h("td", { "data-label": "Instances" }, `${p.in_use_instance_count} in use, ${p.available_instance_count} available of ${p.total_instance_count}`),
      h("td", { "data-label": "Reserved" }, (p.reserved_capacity || [])
        .map((c) => `${c.count} × ${c.instance_type} in ${c.availability_zone_id || c.availability_zone || "?"}`).join("; ")),
      h("td", { "data-label": "Starts" }, when(p.start_time)),
      h("td", { "data-label": "Ends" }, when(p.end_time)))));
    if (!plans.length) fill(body, h("tr", {}, h("td", { colspan: "6" }, "No training plans in this region.")));
  } catch (error) {
    status.textContent = errorText(error);
  }
}
