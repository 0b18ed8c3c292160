// An operation in plain words ("gpu 3 -> 0 on train-1") instead of its internal kind
// (cluster.update_instance_group), from what it asked for and, when done, what it found.

const nodes = (n) => `${n} node${n === 1 ? "" : "s"}`;
const groups = (list) => (list || []).map((g) => `${g.name}: ${g.count} × ${g.instance_type}`).join(", ");

// The first instance group a finished group change named in its AWS request.
function groupOf(o) {
  for (const step of Object.values(o.result || {})) {
    const named = step && step.request && (step.request.InstanceGroups || [])[0];
    if (named && named.InstanceGroupName) return named.InstanceGroupName;
    if (step && step.request && (step.request.InstanceGroupsToDelete || [])[0]) return step.request.InstanceGroupsToDelete[0];
  }
  return null;
}

function countChange(o) {
  for (const step of Object.values(o.result || {})) {
    const change = step && step.diff && step.diff.count;
    if (change) return change;
  }
  return null;
}

const FEATURE = (key) => key.replace(/_/g, " ");

export function operationWords(o) {
  const r = o.request || {};
  const [cluster, item] = String(o.target_id || "").split("/");
  const on = item ? ` on ${cluster}` : "";
  switch (o.kind) {
    case "cluster.create": return `Create cluster ${cluster}${r.instance_groups ? ` (${groups(r.instance_groups)})` : ""}`;
    case "cluster.delete": return `Delete cluster ${cluster}`;
    case "cluster.import": return `Import cluster ${cluster}`;
    case "cluster.reconcile_dependencies": return `Install or repair the dependencies of ${cluster}`;
    case "cluster.update_features": {
      const changes = Object.entries(r).map(([k, v]) => `${FEATURE(k)} ${v && v.enabled === false ? "off" : v && v.enabled ? "on" : "changed"}`);
      return `Features of ${cluster}: ${changes.join(", ") || "changed"}`;
    }
    case "cluster.add_instance_group": return `Add group ${r.name || "?"} to ${cluster}${r.instance_type ? ` (${r.count ?? "?"} × ${r.instance_type})` : ""}`;
    case "cluster.update_instance_group": {
      const group = groupOf(o) || "a group";
      const change = countChange(o);
      if (change) return `${group} ${change.actual} -> ${change.requested} on ${cluster}`;
      if (typeof r.count === "number") return `${group} -> ${nodes(r.count)} on ${cluster}`;
      return `Change ${group} of ${cluster}`;
    }
    case "cluster.delete_instance_group": return `Delete group ${groupOf(o) || ""} of ${cluster}`.replace("  ", " ");
    case "cluster.update_software": return `Software update of ${cluster}${r.instance_groups ? ` (${r.instance_groups.join(", ")})` : ""}`;
    case "cluster.reboot_nodes": return `Reboot ${nodes((r.node_ids || []).length)} of ${cluster}`;
    case "cluster.replace_nodes": return `Replace ${nodes((r.node_ids || []).length)} of ${cluster}`;
    case "cluster.delete_nodes": return `Delete ${nodes((r.node_ids || []).length)} of ${cluster}`;
    case "cluster.start_deep_health_check": return `Deep health check of ${cluster}`;
    case "cluster.set_node_recovery": return `Node recovery of ${cluster}: ${r.mode || "changed"}`;
    case "inference.deploy": return `Deploy endpoint ${item || r.name}${on}`;
    case "inference.delete": return `Delete endpoint ${item}${on}`;
    case "inference.scale": return `Scale endpoint ${item}${on} to ${r.replicas} replica${r.replicas === 1 ? "" : "s"}`;
    case "inference.assign": return `Model pool of ${item}${on}: ${r.model ? `${r.pod} serves ${r.model}` : `${r.pod} unassigned`}`;
    case "workload.submit": return `Submit job ${item || r.name}${on}`;
    case "workload.cancel": return `Cancel job ${item}${on}`;
    case "workload.delete": return `Delete job ${item}${on}`;
    case "workload.download": return `Download ${r.repo_id || "a model"}${on}`;
    case "workload.create_tracking_server": return `Create MLflow server ${cluster}`;
    case "storage.create": return `Create bucket ${cluster}`;
    case "storage.delete": return `Delete bucket ${cluster}`;
    default: return `${String(o.kind || "operation").replace(/[._]/g, " ")} ${o.target_id || ""}`.trim();
  }
}
