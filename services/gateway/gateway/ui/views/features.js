// The Advanced Features panel: actual state read live; toggles; the plan of the change (the
// API's dry run: what changes, which AWS calls and Kubernetes objects, in words) shown before
// "Apply"; "Apply" sends a PATCH with only the fields that changed, asking first when the change
// turns a feature off, then shows the diff from the answer and links the operation.
//
// Managed autoscaling has its Karpenter settings: what HyperPod's managed Karpenter is given
// (AutoScalerType Karpenter, continuous node provisioning, a cluster role), read back from the
// cluster, and its NodePools as an editable list (views/node_pools.js: per pool the instance
// groups, weight, GPU limit and consolidation), sent as `autoscaling.node_pools` with the plan.

import { get, patch } from "../api.js";
import { announce, badge, clearErrors, confirmAction, errorText, field, fill, formError, h, newestOnly, operationLink, section, showErrors } from "../dom.js";
import { dryRun } from "../plan.js";
import { nodePoolsEditor, poolsText } from "./node_pools.js";

const FEATURES = [
  ["training_operator", "HyperPod training operator", "Runs PyTorch jobs with restarts managed by HyperPod."],
  ["inference_operator", "HyperPod inference operator", "Deploys models as endpoints on the cluster."],
  ["tiered_checkpointing", "Tiered checkpointing", "Checkpoints to node memory first, then to S3."],
  ["autoscaling", "Managed autoscaling", "Scales instance groups with HyperPod's managed Karpenter."],
  ["spaces", "SageMaker Spaces", "JupyterLab and Code Editor spaces on the cluster."],
  ["observability", "HyperPod observability", "GPU and EFA metrics into Amazon Managed Prometheus, dashboards in Grafana."],
  ["container_insights", "Container Insights", "Cluster and container metrics and logs in CloudWatch."],
  ["hami", "HAMi GPU sharing", "Shares GPUs by memory and cores (HAMi's scheduler; its device plugin on nodes labelled gpu=on)."],
];
const LABELS = Object.fromEntries(FEATURES.map(([key, label]) => [key, label]));
const onOff = (v) => (v === true ? "on" : v === false ? "off" : v === null || v === undefined ? "not set" : String(v));

function stateLine(key, state) {
  if (!state) return "";
  if (key === "training_operator") return state.status || "";
  if (key === "inference_operator") return state.version ? `version ${state.version}` : "";
  if (key === "tiered_checkpointing") return state.memory_percentage ? `${state.memory_percentage}% of memory` : "";
  if (key === "autoscaling") return state.status || "";
  if (key === "spaces") return state.status || "";
  if (key === "observability") {
    const grafana = state.grafana_workspace && state.grafana_workspace.url;
    return [state.status, grafana ? `Grafana ${grafana}` : ""].filter(Boolean).join(", ");
  }
  if (key === "container_insights") return state.status || "";
  if (key === "hami") {
    if (!state.enabled) return "";
    return [state.version ? `version ${state.version}` : "", state.scheduler_available ? "scheduler available" : "scheduler not available yet",
      state.installed_by_hyperpilot === false ? "installed by another tool" : ""].filter(Boolean).join(", ");
  }
  return "";
}

// "sagemaker UpdateCluster: AutoScaling Mode Enable, AutoScalerType Karpenter; ClusterRole …":
// scalars as they are, a policy document or a list by what it is (the plan keeps them whole).
function paramText(value) {
  if (typeof value === "string") return value.trim().startsWith("{") ? "(a JSON policy document)" : value;
  if (Array.isArray(value)) return `(${value.length} item${value.length === 1 ? "" : "s"})`;
  if (value && typeof value === "object") {
    return Object.entries(value).map(([k, v]) => `${k} ${paramText(v)}`).join(", ");
  }
  return String(value);
}

function callText(call) {
  const params = Object.entries(call.params || {})
    .filter(([k]) => !/^(ClusterName|InstanceGroups)$/.test(k))
    .map(([k, v]) => `${k} ${paramText(v)}`);
  return `${call.service} ${call.operation}${params.length ? `: ${params.join("; ")}` : ""}`;
}

// The features plan in words: the diff per feature, then each AWS call and Kubernetes object.
export function featurePlanLines(plan) {
  const lines = [];
  for (const [key, change] of Object.entries(plan.diff || {})) {
    const [feature, setting] = key.split(".");
    const name = LABELS[feature] || feature;
    const what = setting && setting !== "enabled" ? `${name}, ${setting.replace(/_/g, " ")}` : name;
    const words = setting === "node_pools" ? poolsText : onOff;
    lines.push(`${what}: ${words(change.actual)} -> ${words(change.requested)}`);
  }
  for (const call of plan.calls || []) lines.push(callText(call));
  for (const obj of plan.objects || []) {
    lines.push(`${obj.action === "delete" ? "delete" : "apply"} ${obj.kind} ${obj.namespace ? `${obj.namespace}/` : ""}${obj.name}`);
  }
  lines.push(...(plan.notes || []));
  if (plan.noop && !Object.keys(plan.diff || {}).length) lines.push("Nothing to change: the actual state already matches.");
  return lines;
}

// The Karpenter settings of managed autoscaling, as the cluster has them.
function karpenterSettings(state) {
  const nodeClass = state.node_class;
  const pool = state.node_pool;
  const groups = state.instance_groups || [];
  const rows = [
    ["Autoscaler", `${state.autoscaler_type || "Karpenter"} (HyperPod managed; AutoScalerType Karpenter)`],
    ["Node provisioning", "Continuous (set with autoscaling)"],
    ["Instance groups scaled", groups.length ? groups.join(", ") : "none: add an instance group first (count 0 is fine)"],
    ["HyperpodNodeClass", nodeClass ? `${nodeClass.name}${nodeClass.ready ? `, Ready ${nodeClass.ready}` : ""}` : "not created yet"],
    ["NodePools", (state.node_pools || []).length
      ? state.node_pools.map((p) => p.name).join(", ")
      : pool ? `${pool.name}${pool.ready ? `, Ready ${pool.ready}` : ""}` : "not created yet"],
    ["Cluster role", state.cluster_role
      ? `${state.cluster_role}${state.cluster_role_made_by_hyperpilot ? " (made by Hyperpilot)" : ""}`
      : "made by Hyperpilot when enabled (trusted by hyperpod.sagemaker.amazonaws.com)"],
  ];
  return h("div", { class: "karpenter", role: "group", "aria-label": "Karpenter settings" },
    h("h3", {}, "Karpenter settings"),
    h("dl", { class: "summary facts" }, ...rows.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])),
    state.scope ? h("p", { class: "hint" }, `Scope: ${state.scope}.`) : null);
}

export function featuresPanel(cluster) {
  const path = `/clusters/${encodeURIComponent(cluster)}/features`;
  const form = h("form", { class: "features", novalidate: true, "aria-label": "Advanced features" });
  const result = h("div", { class: "result", role: "status" });
  const apply = h("button", { type: "submit" }, "Apply changes");
  const planBox = h("div", { class: "feature-plan", "aria-live": "polite" });
  const element = section("Advanced features", h("p", { class: "hint" }, "The actual state, read live from the cluster."), form, result);
  let actual = null;
  const toggles = {};
  let memory = null;
  let pools = null; // the node pools editor of managed autoscaling
  let planned = null; // { text: the body as JSON, plan } once the plan of that body is shown
  const planTurn = newestOnly(); // a plan read for an earlier form is not shown after a later one

  function changes() {
    const body = {};
    for (const [key] of FEATURES) {
      const was = Boolean(actual[key] && actual[key].enabled);
      const now = toggles[key].checked;
      if (key === "tiered_checkpointing") {
        const change = {};
        if (now !== was) change.enabled = now;
        const before = actual[key] ? actual[key].memory_percentage : null;
        const after = memory.value === "" ? null : Number(memory.value);
        if (now && after !== null && after !== before) change.memory_percentage = after;
        if (Object.keys(change).length) body[key] = change;
      } else if (key === "autoscaling") {
        if (now && pools && pools.changed()) body[key] = { enabled: true, node_pools: pools.value() };
        else if (now !== was) body[key] = { enabled: now };
      } else if (now !== was) {
        body[key] = now;
      }
    }
    return body;
  }

  // The plan of what the form would send, from the API's dry run; Apply waits for it.
  async function refreshPlan() {
    const body = changes();
    const text = JSON.stringify(body);
    planned = null;
    apply.disabled = true;
    clearErrors(form);
    const mine = planTurn();
    if (!Object.keys(body).length) {
      fill(planBox, h("p", { class: "hint" }, "No changes."));
      return;
    }
    fill(planBox, h("p", { class: "hint" }, "Reading the plan…"));
    try {
      const plan = await dryRun("PATCH", path, body);
      if (!mine()) return;
      planned = { text, plan };
      fill(planBox,
        h("h3", {}, "Plan"),
        h("ul", { class: "diff", "aria-label": "Plan of the change" }, ...featurePlanLines(plan).map((l) => h("li", {}, l))));
      apply.disabled = false;
    } catch (error) {
      if (!mine()) return;
      fill(planBox);
      showErrors(form, error);
    }
  }

  function paint() {
    const rows = FEATURES.map(([key, label, help]) => {
      const state = actual[key] || {};
      const box = h("input", { type: "checkbox", name: key, role: "switch" });
      box.checked = Boolean(state.enabled);
      box.addEventListener("change", refreshPlan);
      toggles[key] = box;
      const wrap = field(label, box, { field: key, hint: help });
      wrap.classList.add("toggle");
      wrap.append(
        h("span", { class: "feature-state" }, badge(state.enabled ? "enabled" : "disabled"), " ", stateLine(key, state)),
      );
      if (key === "tiered_checkpointing") {
        memory = h("input", { type: "number", min: "1", max: "100", name: "memory_percentage", inputmode: "numeric" });
        if (state.memory_percentage) memory.value = state.memory_percentage;
        memory.addEventListener("input", refreshPlan);
        return [wrap, field("Checkpoint memory (% of node memory)", memory, { field: "tiered_checkpointing.memory_percentage" })];
      }
      if (key === "autoscaling") {
        pools = nodePoolsEditor(state.node_pools || [], state.instance_groups || [], refreshPlan);
        return [wrap, karpenterSettings(state), pools.element];
      }
      return wrap;
    });
    fill(form, ...rows.flat(), planBox, formError(), h("div", { class: "actions" }, apply));
    refreshPlan();
  }

  // Read again after each event about the cluster (the live store), unless the user has
  // changes not applied yet: those stay as they are.
  let shown = "";
  async function load() {
    if (!actual) fill(form, h("p", {}, "Reading the cluster…"));
    try {
      const read = await get(path);
      if (actual && Object.keys(changes()).length) return;
      const text = JSON.stringify(read);
      if (text === shown) return;
      shown = text;
      actual = read;
      paint();
    } catch (error) {
      // a cluster not active yet (or whose creation stopped) has no features to read: said plainly
      if (!actual) fill(form, error.code === "cluster_not_ready"
        ? h("p", { class: "hint" }, error.message)
        : h("p", { class: "form-error", role: "alert" }, errorText(error)));
    }
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = changes();
    if (!Object.keys(body).length || !planned || planned.text !== JSON.stringify(body)) return;
    // turning a feature off removes what it made (roles, add-ons, Karpenter's objects): ask
    const off = Object.entries(body).filter(([, v]) => v === false || (v && v.enabled === false)).map(([k]) => LABELS[k]);
    if (off.length && !(await confirmAction(`Turn off ${off.join(" and ")} on ${cluster}?`, "Turn off", featurePlanLines(planned.plan)))) return;
    clearErrors(form);
    apply.disabled = true;
    try {
      const answer = await patch(path, body);
      const diff = answer.diff || {};
      const lines = featurePlanLines({ diff });
      fill(result,
        h("h3", {}, answer.noop ? "Nothing to change" : "Submitted"),
        lines.length ? h("ul", { class: "diff", "aria-label": "Diff" }, ...lines.map((l) => h("li", {}, l))) : h("p", {}, "The cluster already has this state."),
        h("p", {}, operationLink(answer.operation_id, "Follow the operation")),
      );
      announce(answer.noop ? "No change needed" : "Feature change submitted");
      for (const [key, value] of Object.entries(body)) {
        const enabled = typeof value === "boolean" ? value : value.enabled;
        actual[key] = { ...(actual[key] || {}), ...(enabled === undefined ? {} : { enabled }) };
        if (value && value.memory_percentage) actual[key].memory_percentage = value.memory_percentage;
      }
      fill(planBox, h("p", { class: "hint" }, "No changes."));
      planned = null;
    } catch (error) {
      showErrors(form, error);
      apply.disabled = false;
    }
  });

  load();
  return { element, reload: load };
}
