// Create a cluster: decision-grade fields only (region, zone, instance type with its quota,
// count, capacity); the rest defaulted behind "Advanced". On 202 the progress panel takes over.

import { get, post, query } from "../api.js";
import { announce, clearErrors, field, formError, h, showErrors, fill } from "../dom.js";
import { instanceTypePicker } from "../instance_picker.js";
import { progressPanel } from "./progress.js";

const DEFAULTS = {
  group: "gpu",
  kubernetes_version: "1.32",
  node_recovery: "Automatic",
  vpc_cidr: "10.192.0.0/16",
  ebs_volume_gb: "500",
};

function select(name, options = []) {
  const el = h("select", { name });
  setOptions(el, options);
  return el;
}

function setOptions(el, options, selected) {
  fill(el, 
    ...options.map(([value, label]) => h("option", { value, selected: value === selected }, label)),
  );
}

// The served regions, the default one chosen (GET /inspect/regions).
export async function loadRegions(el) {
  try {
    const served = await get("/inspect/regions");
    setOptions(el, served.regions.map((r) => [r, r === served.default ? `${r} (default)` : r]), served.default);
  } catch {
    setOptions(el, [["", "The default region"]], "");
  }
}

export async function render(main) {
  let panel = null;
  main.append(
    h("p", { class: "crumbs" }, h("a", { href: "#/clusters" }, "Clusters"), " / New"),
    h("h1", {}, "Create a cluster"),
  );

  const name = h("input", { name: "name", autocomplete: "off", spellcheck: "false", required: true });
  const region = select("region", [["", "Loading regions…"]]);
  const zone = select("availability_zone_id", [["", "Loading zones…"]]);
  const picker = instanceTypePicker("Instance type", "instance_groups.0.instance_type");
  const type = picker.select;
  picker.message("Choose a zone first");
  const quota = h("p", { class: "hint quota", id: "quota-hint", "aria-live": "polite" });
  const count = h("input", { name: "count", type: "number", min: "0", max: "6758", value: "2", inputmode: "numeric" });
  const capacity = select("capacity_type", [
    ["on-demand", "On-demand"],
    ["spot", "Spot"],
    ["training-plan", "Training plan"],
  ]);
  const plan = h("input", { name: "training_plan_arn", autocomplete: "off", spellcheck: "false" });
  const planField = field("Training plan ARN", plan, { field: "instance_groups.0.training_plan_arn" });
  planField.hidden = true;

  const group = h("input", { name: "group", value: DEFAULTS.group, autocomplete: "off" });
  const version = select("kubernetes_version", ["1.33", "1.32", "1.31", "1.30"].map((v) => [v, v]));
  version.value = DEFAULTS.kubernetes_version;
  const recovery = select("node_recovery", [
    ["Automatic", "Automatic (HyperPod reboots or replaces faulty nodes)"],
    ["None", "None"],
  ]);
  const cidr = h("input", { name: "vpc_cidr", value: DEFAULTS.vpc_cidr, autocomplete: "off" });
  const ebs = h("input", { name: "ebs_volume_gb", type: "number", min: "1", max: "16384", value: DEFAULTS.ebs_volume_gb });

  const submit = h("button", { type: "submit" }, "Create cluster");
  const form = h(
    "form",
    { class: "card", novalidate: true, "aria-label": "New cluster" },
    field("Cluster name", name, {
      field: "name",
      hint: "Letters, digits and hyphens; starts with a letter or digit (max 63).",
    }),
    field("Region", region, { field: "region", hint: "The regions this control plane manages clusters in." }),
    field("Availability Zone", zone, { field: "availability_zone_id", hint: "Zone ids name the same physical zone in every account." }),
    picker.element,
    field("Instance count", count, { field: "instance_groups.0.count" }),
    quota,
    field("Capacity", capacity, { field: "instance_groups.0.capacity_type" }),
    planField,
    h(
      "details",
      { class: "advanced" },
      h("summary", {}, "Advanced (defaults work for most clusters)"),
      field("Instance group name", group, { field: "instance_groups.0.name" }),
      field("Kubernetes version", version, { field: "kubernetes_version" }),
      field("Node recovery", recovery, { field: "node_recovery" }),
      field("VPC CIDR (a new VPC is made)", cidr, { field: "network.vpc_cidr" }),
      field("EBS volume per node (GB)", ebs, { field: "instance_groups.0.ebs_volume_gb" }),
    ),
    formError(),
    h("div", { class: "actions" }, submit, h("a", { href: "#/clusters", class: "button secondary" }, "Cancel")),
  );
  main.append(form);

  async function loadTypes() {
    picker.message("Loading instance types…");
    quota.textContent = "";
    if (!zone.value) return;
    try {
      const offered = await get(`/inspect/instance-types${query({ region: region.value, availability_zone_id: zone.value })}`);
      const types = offered.filter((t) => (t.availability_zone_ids || []).includes(zone.value));
      if (!types.length) {
        picker.message("No HyperPod instance type offered in this zone");
        return;
      }
      const names = types.map((t) => t.instance_type);
      picker.set(types, names.includes("ml.g5.8xlarge") ? "ml.g5.8xlarge" : names[0]);
      loadQuota();
    } catch (error) {
      picker.message("Instance types unavailable");
      quota.textContent = error.message;
    }
  }

  async function loadQuota() {
    quota.textContent = "";
    if (!type.value) return;
    const asked = type.value;
    try {
      const q = await get(`/inspect/quotas${query({ region: region.value, instance_type: asked })}`);
      if (type.value !== asked) return;
      const wanted = Number(count.value || 0);
      const short = typeof q.available === "number" && wanted > q.available;
      quota.className = short ? "hint quota warn" : "hint quota";
      quota.textContent =
        `Quota for ${asked}: ${q.available ?? "?"} available of ${q.value ?? "?"} (${q.in_use ?? 0} in use).` +
        (short ? ` ${wanted} asked: request a quota increase or lower the count.` : "");
    } catch (error) {
      quota.textContent = `Quota unknown: ${error.message}`;
    }
  }

  zone.addEventListener("change", loadTypes);
  region.addEventListener("change", () => {
    picker.message("Choose a zone first");
    quota.textContent = "";
    loadZones();
  });
  type.addEventListener("change", loadQuota);
  count.addEventListener("input", loadQuota);
  capacity.addEventListener("change", () => {
    planField.hidden = capacity.value !== "training-plan";
  });

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearErrors(form);
    const ig = {
      name: group.value.trim() || DEFAULTS.group,
      instance_type: type.value,
      count: count.value === "" ? count.value : Number(count.value),
    };
    if (capacity.value !== "on-demand") ig.capacity_type = capacity.value;
    if (capacity.value === "training-plan") ig.training_plan_arn = plan.value.trim();
    if (ebs.value !== DEFAULTS.ebs_volume_gb) ig.ebs_volume_gb = Number(ebs.value);
    // an empty field is not sent: the API names what is missing
    const body = { name: name.value.trim(), instance_groups: [ig] };
    if (region.value) body.region = region.value;
    if (zone.value) body.availability_zone_id = zone.value;
    if (version.value !== DEFAULTS.kubernetes_version) body.kubernetes_version = version.value;
    if (recovery.value !== DEFAULTS.node_recovery) body.node_recovery = recovery.value;
    if (cidr.value.trim() !== DEFAULTS.vpc_cidr) body.network = { vpc_cidr: cidr.value.trim() };
    submit.disabled = true;
    try {
      const accepted = await post("/clusters", body);
      announce(`Creating cluster ${body.name}`);
      form.hidden = true;
      panel = progressPanel(accepted.operation_id, {
        onFinished: (op) => {
          if (op.status === "succeeded") {
            links.append(" ", h("a", { href: `#/clusters/${encodeURIComponent(body.name)}` }, `Open ${body.name}`));
          }
        },
      });
      const links = h(
        "p",
        { class: "actions" },
        h("a", { href: `#/operations/${accepted.operation_id}` }, "Operation details"),
        " ",
        h("a", { href: "#/clusters" }, "All clusters"),
      );
      main.append(panel.element, links);
      panel.focus();
    } catch (error) {
      showErrors(form, withZones(error));
    } finally {
      submit.disabled = false;
    }
  });

  // A zone error names the zones there are (the API's own list, read for the picker).
  let zoneIds = [];
  function withZones(error) {
    if (!zoneIds.length || !error.fields) return error;
    const fields = error.fields.map((f) =>
      f.field === "availability_zone_id" && f.rule !== "zone_exists"
        ? { ...f, message: `Choose a zone: ${zoneIds.join(", ")}`, hint: "" }
        : f,
    );
    return { ...error, fields };
  }

  async function loadZones() {
    setOptions(zone, [["", "Loading zones…"]]);
    try {
      const zones = await get(`/inspect/availability-zones${query({ region: region.value })}`);
      zoneIds = zones.map((z) => z.zone_id);
      setOptions(
        zone,
        [["", "Choose a zone"], ...zones.map((z) => [z.zone_id, `${z.zone_id} (${z.zone_name})`])],
        "",
      );
      reloadZones.hidden = true;
    } catch (error) {
      setOptions(zone, [["", "Zones unavailable"]]);
      showErrors(form, error);
      reloadZones.hidden = false;
    }
  }
  const reloadZones = h("button", { type: "button", class: "secondary small", hidden: true, onclick: loadZones }, "Reload zones");
  zone.closest(".field").append(reloadZones);
  await loadRegions(region);
  loadZones();
  name.focus();
  return () => panel && panel.stop();
}
