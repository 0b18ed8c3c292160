// A dry-run plan (`?dry_run=true`) told in words: "gpu: 3 -> 0 nodes, 3 nodes terminated".

import { request } from "./api.js";

const nodes = (n) => `${n} node${n === 1 ? "" : "s"}`;

function value(v) {
  if (v === null || v === undefined) return "none";
  if (typeof v === "object") return JSON.stringify(v);
  return String(v);
}

// The plan of a mutation, computed by the API from actual state; nothing is changed.
export async function dryRun(method, path, body) {
  const sep = path.includes("?") ? "&" : "?";
  const answer = await request(method, `${path}${sep}dry_run=true`, body);
  return answer.plan;
}

// One line per change. `group` names the instance group and `count` its node count, for
// plans about one group (its count change or its deletion).
export function planLines(plan, { group, count } = {}) {
  const lines = [];
  // a deletion's diff also carries the group's count and type: its one line says them
  const deleting = (plan.diff || {}).instance_group?.requested === null && typeof count === "number";
  for (const [key, change] of Object.entries(plan.diff || {})) {
    const { actual, requested } = change || {};
    if (deleting && key !== "instance_group") continue;
    if (key === "count" && typeof actual === "number" && typeof requested === "number") {
      const delta = requested - actual;
      const effect = delta < 0 ? `${nodes(-delta)} terminated` : `${nodes(delta)} added`;
      lines.push(`${group || "group"}: ${actual} -> ${requested} nodes, ${effect}`);
    } else if (key === "instance_group" && requested === null && typeof count === "number") {
      lines.push(`${actual}: ${count} -> 0 nodes, ${nodes(count)} terminated, the group is deleted`);
    } else {
      lines.push(`${key}: ${value(actual)} -> ${value(requested)}`);
    }
  }
  const calls = plan.calls || [];
  if (!lines.length && calls.length) {
    lines.push(`${calls.length} AWS call${calls.length === 1 ? "" : "s"}: ${calls.map((c) => `${c.service} ${c.operation}`).join(", ")}`);
  }
  lines.push(...(plan.notes || []));
  if (!lines.length && plan.noop) lines.push("Nothing to change: the actual state already matches.");
  return lines;
}

// True when the count change of a plan removes nodes.
export function removesNodes(plan) {
  const change = (plan.diff || {}).count;
  return Boolean(change) && Number(change.requested) < Number(change.actual);
}
