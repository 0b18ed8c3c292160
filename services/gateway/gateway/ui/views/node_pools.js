// The Karpenter NodePools of managed autoscaling, as a list the user edits: per pool its name,
// the instance groups it may scale, its weight among pools, its GPU limit and its consolidation.
// The editor only holds the list; the features panel sends it as `autoscaling.node_pools` and
// shows the API's dry-run diff before anything is applied. Field names are the contract's
// (`autoscaling.node_pools.<i>.<field>`), so the API's errors land at their fields.

import { field, h } from "../dom.js";

const CONSOLIDATION = [
  ["WhenEmpty", "When empty"],
  ["WhenEmptyOrUnderutilized", "When empty or underutilized"],
];

// One pool in words, for the plan's diff: "gpu-pool (groups gpu, gpu-b; weight 10; at most
// 16 GPUs; consolidates when empty after 5m)".
export function poolText(pool) {
  const parts = [`groups ${(pool.instance_groups || []).join(", ") || "none"}`];
  if (pool.weight !== null && pool.weight !== undefined) parts.push(`weight ${pool.weight}`);
  if (pool.gpu_limit !== null && pool.gpu_limit !== undefined) parts.push(`at most ${pool.gpu_limit} GPUs`);
  const when = pool.consolidation === "WhenEmptyOrUnderutilized" ? "when empty or underutilized" : "when empty";
  parts.push(`consolidates ${when} after ${pool.consolidate_after || "5m"}`);
  return `${pool.name} (${parts.join("; ")})`;
}

export function poolsText(pools) {
  if (!Array.isArray(pools) || !pools.length) return "none";
  return pools.map(poolText).join(", ");
}

// A pool as the contract takes it: blanks are left out so the API's defaults apply.
function normalized(pool) {
  const out = { name: pool.name, instance_groups: [...pool.instance_groups] };
  if (pool.weight !== null && pool.weight !== undefined && pool.weight !== "") out.weight = pool.weight;
  if (pool.gpu_limit !== null && pool.gpu_limit !== undefined && pool.gpu_limit !== "") out.gpu_limit = pool.gpu_limit;
  out.consolidation = pool.consolidation || "WhenEmpty";
  out.consolidate_after = pool.consolidate_after || "5m";
  return out;
}

const numberOrBlank = (text) => (text.trim() === "" ? null : Number(text));

// `pools`: the NodePools the cluster has (GET features' autoscaling.node_pools);
// `groups`: the cluster's instance groups; `onChange`: called after every edit.
// Returns { element, value(): the pools as the contract takes them, changed(): edited? }.
export function nodePoolsEditor(pools, groups, onChange) {
  let rows = (pools || []).map((p) => ({ ...p, instance_groups: [...(p.instance_groups || [])] }));
  const initial = JSON.stringify(rows.map(normalized));
  const list = h("div", { class: "node-pools" });
  const element = h("fieldset", { class: "node-pools-editor", "aria-label": "Karpenter node pools" },
    h("legend", {}, "Node pools"),
    h("p", { class: "hint" }, "Each NodePool scales the instance groups ticked in it; Karpenter tries pools of higher weight first."),
    list);

  const changed = () => {
    onChange();
  };

  function poolRow(pool, index) {
    const prefix = `autoscaling.node_pools.${index}`;
    const name = h("input", { type: "text", name: `pool-${index}-name`, value: pool.name || "", autocomplete: "off", spellcheck: "false" });
    name.addEventListener("input", () => { pool.name = name.value.trim(); changed(); });
    const boxes = h("div", { class: "pool-groups", role: "group", "aria-label": `Instance groups of pool ${index + 1}` },
      ...(groups.length ? groups : []).map((group) => {
        const box = h("input", { type: "checkbox", name: `pool-${index}-group`, value: group });
        box.checked = pool.instance_groups.includes(group);
        box.addEventListener("change", () => {
          pool.instance_groups = groups.filter((g) => (g === group ? box.checked : pool.instance_groups.includes(g)));
          changed();
        });
        return h("label", { class: "check" }, box, ` ${group}`);
      }),
      groups.length ? null : h("p", { class: "hint" }, "No instance groups yet: add one first (count 0 is fine)."));
    const weight = h("input", { type: "number", min: "1", max: "100", inputmode: "numeric", name: `pool-${index}-weight`, value: pool.weight ?? "" });
    weight.addEventListener("input", () => { pool.weight = numberOrBlank(weight.value); changed(); });
    const limit = h("input", { type: "number", min: "0", inputmode: "numeric", name: `pool-${index}-gpu-limit`, value: pool.gpu_limit ?? "" });
    limit.addEventListener("input", () => { pool.gpu_limit = numberOrBlank(limit.value); changed(); });
    const policy = h("select", { name: `pool-${index}-consolidation` },
      ...CONSOLIDATION.map(([value, label]) => h("option", { value }, label)));
    policy.value = pool.consolidation || "WhenEmpty";
    policy.addEventListener("change", () => { pool.consolidation = policy.value; changed(); });
    const after = h("input", { type: "text", name: `pool-${index}-after`, value: pool.consolidate_after || "5m", size: "6", spellcheck: "false" });
    after.addEventListener("input", () => { pool.consolidate_after = after.value.trim(); changed(); });
    const remove = h("button", { type: "button", class: "secondary", "aria-label": `Remove pool ${pool.name || index + 1}` }, "Remove pool");
    remove.addEventListener("click", () => { rows = rows.filter((r) => r !== pool); paint(); changed(); });
    return h("div", { class: "node-pool", role: "group", "aria-label": `Node pool ${index + 1}` },
      field("Name", name, { field: `${prefix}.name`, hint: "lowercase letters, digits and dashes" }),
      field("Instance groups", boxes, { field: `${prefix}.instance_groups` }),
      field("Weight (1-100, optional)", weight, { field: `${prefix}.weight` }),
      field("GPU limit (optional)", limit, { field: `${prefix}.gpu_limit` }),
      field("Consolidation", policy, { field: `${prefix}.consolidation` }),
      field("Consolidate after (e.g. 5m)", after, { field: `${prefix}.consolidate_after` }),
      h("div", { class: "actions" }, remove));
  }

  const add = h("button", { type: "button", class: "secondary" }, "Add a node pool");
  add.addEventListener("click", () => {
    const taken = new Set(rows.map((r) => r.name));
    let n = rows.length + 1;
    while (taken.has(`pool-${n}`)) n += 1;
    rows.push({ name: `pool-${n}`, instance_groups: [], weight: null, gpu_limit: null, consolidation: "WhenEmpty", consolidate_after: "5m" });
    paint();
    changed();
  });

  function paint() {
    list.replaceChildren(...rows.map(poolRow), h("div", { class: "actions" }, add));
  }
  paint();

  return {
    element,
    value: () => rows.map(normalized),
    changed: () => JSON.stringify(rows.map(normalized)) !== initial,
  };
}
