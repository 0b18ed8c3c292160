// Training plans: the account's plans (status, what each reserves where and when, the instance
// groups using it), kept current by the event stream; a search of SageMaker's offerings (instance
// type, count, duration, window; the answers filtered by zone), each with its upfront fee; and,
// for admins, Buy: the dry run's plan and the fee in a confirmation dialog, then the purchase
// confirming that fee (POST /api/v1/training-plans). Other roles see no Buy button (the API
// refuses them too). `plansThatFit` also serves the add-group form of the cluster page.

import { get, post } from "../api.js";
import {
  announce, badge, clearErrors, confirmAction, errorText, field, fill, formError, h, operationLink,
  section, showErrors, when,
} from "../dom.js";
import { instanceTypePicker } from "../instance_picker.js";
import { dryRun } from "../plan.js";
import { onChange } from "../store.js";

const COUNTS = [1, 2, 4, 8, 16, 32, 64];

export function feeText(fee, currency = "USD") {
  const amount = Number(fee);
  const shown = Number.isFinite(amount)
    ? amount.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 })
    : String(fee);
  return `$${shown} ${currency}`;
}

// The Active plans that reserve `instanceType` in the zone `zoneId` (any zone when not given).
export function plansThatFit(plans, instanceType, zoneId) {
  return plans.filter((p) => p.status === "Active" && (p.reserved_capacity || []).some((c) =>
    c.instance_type === instanceType && (!zoneId || c.availability_zone_id === zoneId)));
}

const reserved = (p) => (p.reserved_capacity || [])
  .map((c) => `${c.count} × ${c.instance_type} in ${c.availability_zone || c.availability_zone_id || "?"}`)
  .join("; ");

// cluster/group of every instance group naming a plan, by plan ARN (read from each cluster's
// instance groups; a cluster that cannot be read is skipped).
async function groupsByPlan() {
  const clusters = await get("/clusters?limit=1000").catch(() => []);
  const used = new Map();
  const lists = await Promise.all(clusters.map((c) =>
    get(`/clusters/${encodeURIComponent(c.name)}/instance-groups?limit=1000`).then((gs) => [c.name, gs], () => [c.name, []])));
  for (const [cluster, groups] of lists) {
    for (const g of groups) {
      const arn = g.spec && g.spec.training_plan_arn;
      if (!arn) continue;
      if (!used.has(arn)) used.set(arn, []);
      used.get(arn).push(`${cluster}/${g.name}`);
    }
  }
  return used;
}

function planRow(p, used) {
  const groups = used.get(p.arn) || [];
  return h("tr", { "data-plan": p.name },
    h("th", { scope: "row", "data-label": "Plan" }, p.name, h("br"), h("span", { class: "hint wrap" }, p.arn)),
    h("td", { "data-label": "Status" }, badge(p.status), p.status_message ? h("span", { class: "hint" }, ` ${p.status_message}`) : null),
    h("td", { "data-label": "Instances" }, `${p.in_use_instance_count} in use, ${p.available_instance_count} available of ${p.total_instance_count}`),
    h("td", { "data-label": "Reserved" }, reserved(p)),
    h("td", { "data-label": "Window" }, when(p.start_time), p.end_time ? " to " : "", when(p.end_time),
      p.duration_hours ? h("span", { class: "hint" }, ` (${p.duration_hours} h)`) : null),
    h("td", { "data-label": "Used by" }, groups.length ? groups.join(", ") : h("span", { class: "hint" }, "no group")));
}

// datetime-local (the browser's time zone) -> ISO in UTC; empty -> undefined
const instant = (input) => (input.value ? new Date(input.value).toISOString() : undefined);

export async function render(main) {
  const admin = await get("/tokens?limit=1").then(() => true, () => false);
  const status = h("div", { class: "notice", role: "status" });
  const body = h("tbody");
  const list = h("table", { class: "list plans" },
    h("caption", { class: "visually-hidden" }, "Training plans"),
    h("thead", {}, h("tr", {}, ...["Plan", "Status", "Instances", "Reserved", "Window", "Used by"]
      .map((c) => h("th", { scope: "col" }, c)))),
    body);

  async function reread() {
    try {
      const [plans, used] = await Promise.all([get("/inspect/training-plans"), groupsByPlan()]);
      status.textContent = "";
      fill(body, ...plans.map((p) => planRow(p, used)));
      if (!plans.length) fill(body, h("tr", {}, h("td", { colspan: "6" }, "No training plans in this region.")));
    } catch (error) {
      status.textContent = errorText(error);
    }
  }

  // the search
  const picker = instanceTypePicker("Instance type", "query.instance_type");
  const count = h("select", { name: "instance_count" }, ...COUNTS.map((c) => h("option", { value: String(c) }, String(c))));
  const days = h("input", { name: "duration_days", type: "number", min: "1", max: "182", value: "1", inputmode: "numeric" });
  const zone = h("select", { name: "availability_zone" }, h("option", { value: "" }, "Any zone"));
  const after = h("input", { name: "start_after", type: "datetime-local" });
  const before = h("input", { name: "end_before", type: "datetime-local" });
  const search = h("form", { novalidate: true, "aria-label": "Search training plan offerings" },
    picker.element,
    h("div", { class: "row" },
      field("Instances", count, { field: "query.instance_count" }),
      field("Duration (days)", days, { field: "query.duration_days", hint: "1 to 182 whole days" }),
      field("Zone", zone, { field: "availability_zone", hint: "Shows only the offerings in this zone" })),
    h("div", { class: "row" },
      field("Starts after", after, { field: "query.start_after", hint: "Empty: from now" }),
      field("Ends before", before, { field: "query.end_before", hint: "Empty: any end" })),
    formError(),
    h("button", { type: "submit" }, "Search offerings"));
  get("/inspect/instance-types")
    .then((types) => picker.set(types, "ml.p5.48xlarge"))
    .catch(() => picker.message("Instance types unavailable"));
  get("/inspect/availability-zones")
    .then((zones) => zone.append(...zones.map((z) => h("option", { value: z.zone_name }, `${z.zone_name} (${z.zone_id})`))))
    .catch(() => {});

  const planName = h("input", { name: "name", autocomplete: "off", spellcheck: "false" });
  const buyForm = h("form", { novalidate: true, "aria-label": "Buy a training plan", class: "inline-form" },
    field("Name of the plan to buy", planName, { field: "name", hint: "Letters, digits and hyphens, up to 63" }),
    h("span", { "data-field": "offering_id", id: "buy-offering" }),
    h("p", { class: "field-error", id: "buy-offering-error", hidden: true }),
    h("span", { "data-field": "confirm_upfront_fee", id: "buy-fee" }),
    h("p", { class: "field-error", id: "buy-fee-error", hidden: true }),
    formError());
  buyForm.addEventListener("submit", (event) => event.preventDefault());
  const answers = h("div", { class: "offerings", "aria-live": "polite" });

  async function buy(offering, asked) {
    clearErrors(buyForm);
    const order = { name: planName.value.trim(), offering_id: offering.offering_id, search: asked };
    let plan;
    try {
      plan = await dryRun("POST", "/training-plans", order);
    } catch (error) {
      showErrors(buyForm, error);
      return;
    }
    const wanted = (plan.diff.training_plan || {}).requested || {};
    const fee = wanted.upfront_fee ?? offering.upfront_fee;
    const lines = [
      `${wanted.instance_count} × ${wanted.instance_type} in ${wanted.availability_zone}`,
      `${wanted.duration_hours} h from ${wanted.start_time} to ${wanted.end_time}`,
      `Upfront fee: ${feeText(fee, wanted.currency)}, charged now`,
      ...(plan.calls || []).map((c) => `AWS call: ${c.service} ${c.operation}`),
      ...(plan.notes || []),
    ];
    const ok = await confirmAction(`Buy training plan ${order.name} for ${feeText(fee, wanted.currency)}?`, "Buy plan", lines);
    if (!ok) return;
    try {
      const accepted = await post("/training-plans", { ...order, confirm_upfront_fee: fee });
      fill(status, `Buying ${order.name}. `, operationLink(accepted.operation_id));
      announce(`Buying training plan ${order.name}`);
      planName.value = "";
    } catch (error) {
      showErrors(buyForm, error);
    }
  }

  function paintOfferings(found, asked) {
    const shown = found.filter((o) => !zone.value || o.availability_zone === zone.value);
    if (!shown.length) {
      fill(answers, h("p", {}, found.length
        ? `No offering in ${zone.value}; ${found.length} in other zones (choose Any zone).`
        : "No offering for this search: try another count, duration or window."));
      return;
    }
    const heads = ["Offering", "Zone", "Instances", "Window", "Upfront fee"];
    if (admin) heads.push("Buy");
    fill(answers,
      admin ? buyForm : h("p", { class: "hint" }, "Buying a plan needs an admin token; this one reads only."),
      h("div", { class: "table-wrap" }, h("table", { class: "list" },
        h("caption", { class: "visually-hidden" }, "Offerings"),
        h("thead", {}, h("tr", {}, ...heads.map((c) => h("th", { scope: "col" }, c)))),
        h("tbody", {}, ...shown.map((o) => h("tr", { "data-offering": o.offering_id },
          h("th", { scope: "row", "data-label": "Offering" }, o.offering_id),
          h("td", { "data-label": "Zone" }, o.availability_zone || ""),
          h("td", { "data-label": "Instances" }, `${o.instance_count} × ${o.instance_type}`),
          h("td", { "data-label": "Window" }, when(o.start_time), " to ", when(o.end_time), ` (${o.duration_hours} h)`),
          h("td", { "data-label": "Upfront fee", class: "fee" }, feeText(o.upfront_fee, o.currency)),
          admin ? h("td", { "data-label": "Buy" }, h("button", {
            type: "button", class: "small", "aria-label": `Buy ${o.offering_id}`, onclick: () => buy(o, asked),
          }, "Buy")) : null))))),
    );
  }

  search.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearErrors(search);
    const asked = {
      instance_type: picker.select.value,
      instance_count: Number(count.value),
      duration_days: days.value.trim() === "" ? "" : Number(days.value),
    };
    const start = instant(after);
    const end = instant(before);
    if (start) asked.start_after = start;
    if (end) asked.end_before = end;
    const query = new URLSearchParams(Object.entries(asked).map(([k, v]) => [k, String(v)]));
    fill(answers, h("p", {}, "Searching…"));
    try {
      paintOfferings(await get(`/training-plans/offerings?${query}`), asked);
    } catch (error) {
      fill(answers);
      showErrors(search, error);
    }
  });

  main.append(
    h("h1", {}, "Training plans"),
    status,
    h("div", { class: "table-wrap" }, list),
    section("Search offerings", search, answers),
  );
  await reread();
  return onChange(reread);
}
