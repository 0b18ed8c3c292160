// The Advanced Features panel: actual state read live; toggles; "Apply" sends a PATCH with only
// the fields that changed, then shows the diff from the answer and links the operation.

import { get, patch } from "../api.js";
import { announce, badge, clearErrors, errorText, field, formError, h, operationLink, section, showErrors, fill } from "../dom.js";

const FEATURES = [
  ["training_operator", "HyperPod training operator", "Runs PyTorch jobs with restarts managed by HyperPod."],
  ["inference_operator", "HyperPod inference operator", "Deploys models as endpoints on the cluster."],
  ["tiered_checkpointing", "Tiered checkpointing", "Checkpoints to node memory first, then to S3."],
  ["autoscaling", "Managed autoscaling", "Scales instance groups with HyperPod's managed Karpenter."],
];

function stateLine(key, state) {
  if (!state) return "";
  if (key === "training_operator") return state.status || "";
  if (key === "inference_operator") return state.version ? `version ${state.version}` : "";
  if (key === "tiered_checkpointing") return state.memory_percentage ? `${state.memory_percentage}% of memory` : "";
  if (key === "autoscaling") return state.status || "";
  return "";
}

export function featuresPanel(cluster) {
  const form = h("form", { class: "features", novalidate: true, "aria-label": "Advanced features" });
  const result = h("div", { class: "result", role: "status" });
  const apply = h("button", { type: "submit" }, "Apply changes");
  const pending = h("p", { class: "hint", "aria-live": "polite" });
  const element = section("Advanced features", h("p", { class: "hint" }, "The actual state, read live from the cluster."), form, result);
  let actual = null;
  const toggles = {};
  let memory = null;

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
        if (now !== was) body[key] = { enabled: now };
      } else if (now !== was) {
        body[key] = now;
      }
    }
    return body;
  }

  function refreshPending() {
    const body = changes();
    const n = Object.keys(body).length;
    apply.disabled = n === 0;
    pending.textContent = n ? `Will send: ${JSON.stringify(body)}` : "No changes.";
  }

  function paint() {
    const rows = FEATURES.map(([key, label, help]) => {
      const state = actual[key] || {};
      const box = h("input", { type: "checkbox", name: key, role: "switch" });
      box.checked = Boolean(state.enabled);
      box.addEventListener("change", refreshPending);
      toggles[key] = box;
      const wrap = field(label, box, { field: key, hint: help });
      wrap.classList.add("toggle");
      wrap.append(
        h("span", { class: "feature-state" }, badge(state.enabled ? "enabled" : "disabled"), " ", stateLine(key, state)),
      );
      if (key === "tiered_checkpointing") {
        memory = h("input", { type: "number", min: "1", max: "100", name: "memory_percentage", inputmode: "numeric" });
        if (state.memory_percentage) memory.value = state.memory_percentage;
        memory.addEventListener("input", refreshPending);
        return [wrap, field("Checkpoint memory (% of node memory)", memory, { field: "tiered_checkpointing.memory_percentage" })];
      }
      return wrap;
    });
    fill(form, ...rows.flat(), pending, formError(), h("div", { class: "actions" }, apply));
    refreshPending();
  }

  // Read again after each event about the cluster (the live store), unless the user has
  // changes not applied yet: those stay as they are.
  let shown = "";
  async function load() {
    if (!actual) fill(form, h("p", {}, "Reading the cluster…"));
    try {
      const read = await get(`/clusters/${encodeURIComponent(cluster)}/features`);
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
    clearErrors(form);
    const body = changes();
    if (!Object.keys(body).length) return;
    apply.disabled = true;
    try {
      const answer = await patch(`/clusters/${encodeURIComponent(cluster)}/features`, body);
      const diff = answer.diff || {};
      const lines = Object.entries(diff).map(([k, v]) => h("li", {}, h("code", {}, k), ": ", JSON.stringify(v)));
      fill(result, 
        h("h3", {}, answer.noop ? "Nothing to change" : "Submitted"),
        h("p", {}, "Sent: ", h("code", { class: "sent" }, JSON.stringify(body))),
        lines.length ? h("ul", { class: "diff", "aria-label": "Diff" }, ...lines) : h("p", {}, "The cluster already has this state."),
        h("p", {}, operationLink(answer.operation_id, "Follow the operation")),
      );
      announce(answer.noop ? "No change needed" : "Feature change submitted");
      for (const [key, value] of Object.entries(body)) {
        const enabled = typeof value === "boolean" ? value : value.enabled;
        actual[key] = { ...(actual[key] || {}), ...(enabled === undefined ? {} : { enabled }) };
        if (value && value.memory_percentage) actual[key].memory_percentage = value.memory_percentage;
      }
      refreshPending();
    } catch (error) {
      showErrors(form, error);
      apply.disabled = false;
    }
  });

  load();
  return { element, reload: load };
}
