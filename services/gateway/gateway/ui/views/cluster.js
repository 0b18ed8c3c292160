// Cluster detail: summary, instance groups (add, scale, delete), nodes (health; reboot,
// replace, delete), storage buckets, dependencies, the Advanced Features panel and, with
// observability on, a GPU utilization heatmap per node (views/gpu_heatmap.js); links to its
// training jobs and its diagnostics (views/diagnostics.js).

import { del, get, patch, post, put } from "../api.js";
import {
  announce, badge, clearErrors, confirmAction, errorText, field, formError, h, operationLink,
  fill, section, showErrors, when, wideSection,
} from "../dom.js";
import { dryRun, planLines } from "../plan.js";
import { onChange, watch } from "../store.js";
import { instanceTypePicker } from "../instance_picker.js";
import { featuresPanel } from "./features.js";
import { gpuHeatmap } from "./gpu_heatmap.js";
import { driftPanel } from "./drift.js";
import { storageClaimsPanel } from "./storage_claims.js";
import { plansThatFit } from "./training_plans.js";

function table(caption, columns, rows) {
  return h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      { class: "list" },
      h("caption", { class: "visually-hidden" }, caption),
      h("thead", {}, h("tr", {}, ...columns.map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, ...rows),
    ),
  );
}

export async function render(main, [name]) {
  const base = `/clusters/${encodeURIComponent(name)}`;
  const status = h("div", { class: "notice", role: "status" });

  function started(what, accepted) {
    fill(status, `${what}: `, operationLink(accepted.operation_id, "follow the operation"));
    announce(`${what} started`);
  }

  // The page follows the change through the live store: no re-read here. A refusal is shown
  // at `where` (next to the control it is about) when given, else at the top.
  async function act(what, call, where = null) {
    try {
      const accepted = await call();
      if (accepted && accepted.operation_id) started(what, accepted);
      else status.textContent = `${what}: done.`;
    } catch (error) {
      if (where) where(error);
      else status.textContent = `${what}: ${errorText(error)}`;
    }
  }

  main.append(
    h("p", { class: "crumbs" }, h("a", { href: "#/clusters" }, "Clusters"), ` / ${name}`),
  );
  let cluster;
  try {
    cluster = await get(base);
  } catch (error) {
    main.append(h("h1", {}, name), h("p", { class: "form-error", role: "alert" }, errorText(error)));
    return undefined;
  }

  const summary = h("dl", { class: "summary" });
  const activeBadge = h("span");
  const nextSteps = h("div");
  // A cluster whose operation was cancelled or failed has nothing running: it is resumed (the
  // operation retried from its first unfinished stage) or cleaned up (deleted), not waited for.
  async function paintNextSteps(c) {
    const ended = c.status !== "active" && c.operation_id
      ? await get(`/operations/${c.operation_id}`).then((op) => op.status, () => null)
      : null;
    if (!["cancelled", "failed"].includes(ended)) {
      fill(nextSteps);
      return;
    }
    const retry = h("button", { type: "button", onclick: () => act("Resume", () => post(`/operations/${c.operation_id}/retry`)) }, "Resume");
    const clean = h("button", { type: "button", class: "danger", onclick: async () => {
      try {
        const plan = await dryRun("DELETE", base);
        if (!await confirmAction(`Delete cluster ${name} and everything Hyperpilot created for it?`, `Delete ${name}`, planLines(plan))) return;
      } catch (error) {
        status.textContent = errorText(error);
        return;
      }
      act(`Delete ${name}`, () => del(base));
    } }, "Clean up (delete)");
    fill(nextSteps, h("section", { class: "card next-steps", "aria-labelledby": "next-steps-title" },
      h("h2", { id: "next-steps-title" }, `The cluster's last operation ${ended === "failed" ? "failed" : "was cancelled"}`),
      h("p", {}, "Nothing is running on it now. Resume goes on from the first stage that did not finish; clean up deletes what was made so far."),
      h("p", { class: "actions" }, retry, " ", clean, " ", operationLink(c.operation_id, "what happened"))));
  }
  function paintSummary(c) {
    paintNextSteps(c);
    fill(summary,
      h("dt", {}, "Status"), h("dd", { class: "cluster-status" }, badge(c.status)),
      h("dt", {}, "Region"), h("dd", {}, c.region || ""),
      h("dt", {}, "Zone"), h("dd", {}, (c.spec && c.spec.availability_zone_id) || ""),
      h("dt", {}, "Kubernetes"), h("dd", {}, (c.spec && c.spec.kubernetes_version) || ""),
      h("dt", {}, "EKS"), h("dd", { class: "wrap" }, c.eks_cluster_arn || "—"),
      h("dt", {}, "HyperPod"), h("dd", { class: "wrap" }, c.hyperpod_cluster_arn || "—"),
      h("dt", {}, "Created"), h("dd", {}, when(c.created_at)),
      c.operation_id ? [h("dt", {}, "Last operation"), h("dd", {}, operationLink(c.operation_id, "view"))] : null,
    );
    fill(activeBadge, c.active ? badge("active") : null);
  }
  paintSummary(cluster);
  const drift = driftPanel(name, status);
  main.append(
    h("div", { class: "title-row" }, h("h1", {}, name), activeBadge),
    h("p", { class: "actions" },
      h("a", { href: `#/clusters/${encodeURIComponent(name)}/jobs`, class: "button secondary" }, "Training jobs"),
      h("a", { href: `#/clusters/${encodeURIComponent(name)}/diagnostics`, class: "button secondary" }, "Diagnostics"),
      h("a", { href: `#/clusters/${encodeURIComponent(name)}/models`, class: "button secondary" }, "Model downloads"),
      h("a", { href: `#/clusters/${encodeURIComponent(name)}/spaces`, class: "button secondary" }, "Spaces"),
      h("a", { href: `#/clusters/${encodeURIComponent(name)}/software`, class: "button secondary" }, "Software update"),
      h("a", { href: `#/clusters/${encodeURIComponent(name)}/teams`, class: "button secondary" }, "Teams"),
      h("a", { href: "#/endpoints", class: "button secondary" }, "Inference endpoints")),
    status,
    nextSteps,
    drift.element,
    section("Summary", summary),
  );

  // Instance groups
  const groupsBox = h("div", {}, h("p", {}, "Reading instance groups…"));
  const groupsSection = wideSection("Instance groups", groupsBox, addGroupForm());
  function paintGroups(groups) {
    fill(groupsBox,
      table(
        "Instance groups",
        ["Group", "Type", "Count", "Status", "Scale", "Delete"],
        groups.map((g) => groupRow(g)),
      ),
    );
  }

  // A count box sends nothing while it is empty or unchanged; a scale-down and a deletion show
  // the dry-run plan in words and ask first.
  function groupRow(g) {
    const path = `${base}/instance-groups/${encodeURIComponent(g.name)}`;
    const note = h("p", { class: "hint scale-note", id: `scale-${g.name}-note`, "aria-live": "polite" });
    const refused = (error) => {
      note.className = "field-error scale-note";
      note.textContent = errorText(error.fields && error.fields[0] ? error.fields[0] : error);
      n.setAttribute("aria-invalid", "true");
    };
    const n = h("input", {
      type: "number", min: "0", max: "6758", value: String(g.count), inputmode: "numeric",
      "aria-label": `New count for ${g.name}`, "aria-describedby": note.id, class: "count",
    });
    const scale = h("button", { type: "button", class: "small secondary", disabled: true, "aria-label": `Scale ${g.name}` }, "Scale");
    const wanted = () => (n.value.trim() === "" ? null : Number(n.value));
    n.addEventListener("input", () => {
      const count = wanted();
      scale.disabled = count === null || count === g.count;
      note.className = "hint scale-note";
      note.textContent = count === null ? "Enter the new count." : "";
      n.removeAttribute("aria-invalid");
    });
    scale.addEventListener("click", async () => {
      const count = wanted();
      if (count === null || count === g.count) return;
      const body = { count };
      if (count < g.count) {
        let plan;
        try {
          plan = await dryRun("PATCH", path, body);
        } catch (error) {
          refused(error);
          return;
        }
        const ok = await confirmAction(`Scale ${g.name} down to ${count}?`, `Scale ${g.name}`, planLines(plan, { group: g.name }));
        if (!ok) return;
      }
      act(`Scale ${g.name} to ${count}`, () => patch(path, body), refused);
    });
    const remove = h("button", {
      type: "button",
      class: "small danger",
      "aria-label": `Delete instance group ${g.name}`,
      onclick: async () => {
        let plan;
        try {
          plan = await dryRun("DELETE", path);
        } catch (error) {
          refused(error);
          return;
        }
        if (await confirmAction(`Delete instance group ${g.name}?`, "Delete group", planLines(plan, { group: g.name, count: g.count }))) {
          act(`Delete ${g.name}`, () => del(path), refused);
        }
      },
    }, "Delete");
    return h(
      "tr",
      { "data-group": g.name },
      h("th", { scope: "row", "data-label": "Group" }, g.name),
      h("td", { "data-label": "Type" }, g.instance_type),
      h("td", { "data-label": "Count" }, String(g.count)),
      h("td", { "data-label": "Status" }, badge(g.status)),
      h("td", { "data-label": "Scale" }, h("span", { class: "inline" }, n, scale), note),
      h("td", { "data-label": "Delete" }, remove),
    );
  }

  function addGroupForm() {
    const gname = h("input", { name: "name", autocomplete: "off" });
    const picker = instanceTypePicker("Instance type", "instance_type");
    const type = picker.select;
    const count = h("input", { name: "count", type: "number", min: "0", value: "1" });
    // a training plan: the Active plans reserving this type in the cluster's zone
    const plan = h("select", { name: "training_plan_arn" }, h("option", { value: "" }, "None (on-demand)"));
    let plans = [];
    const paintPlans = () => fill(plan, h("option", { value: "" }, "None (on-demand)"),
      ...plansThatFit(plans, type.value, zone).map((p) => h("option", { value: p.arn },
        `${p.name} (${p.available_instance_count} of ${p.total_instance_count} available)`)));
    type.addEventListener("change", paintPlans);
    const form = h(
      "form",
      { novalidate: true, "aria-label": "Add an instance group" },
      h("div", { class: "row" },
        field("Group name", gname, { field: "name" }),
        field("Count", count, { field: "count" }),
      ),
      picker.element,
      field("Training plan", plan, { field: "training_plan_arn", hint: "Active plans for this type in the cluster's zone" }),
      formError(),
      h("button", { type: "submit" }, "Add group"),
    );
    const zone = cluster.spec && cluster.spec.availability_zone_id;
    get(`/inspect/instance-types${zone ? `?availability_zone_id=${zone}` : ""}`)
      .then((types) => picker.set(
        types.filter((t) => !zone || (t.availability_zone_ids || []).includes(zone)),
        (cluster.spec && cluster.spec.instance_groups && cluster.spec.instance_groups[0] || {}).instance_type,
      ))
      .catch(() => picker.message("Instance types unavailable"))
      .then(() => get("/inspect/training-plans"))
      .then((found) => {
        plans = found;
        paintPlans();
      }, () => {});
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      clearErrors(form);
      const group = { name: gname.value.trim(), instance_type: type.value, count: Number(count.value) };
      if (plan.value) Object.assign(group, { capacity_type: "training-plan", training_plan_arn: plan.value, availability_zone_id: zone });
      try {
        const accepted = await post(`${base}/instance-groups`, group);
        started(`Add ${gname.value.trim()}`, accepted);
        form.reset();
      } catch (error) {
        showErrors(form, error);
      }
    });
    return h("details", {}, h("summary", {}, "Add an instance group"), form);
  }

  // Nodes
  // Changes that confirm with their dry-run plan first (health checks take nodes out of
  // service; recovery None leaves faulty nodes until someone acts).
  async function confirmed(question, label, method, path, body) {
    try {
      const plan = await dryRun(method, path, body);
      if (!(await confirmAction(question, label, planLines(plan)))) return;
    } catch (error) {
      status.textContent = `${label}: ${errorText(error)}`;
      return;
    }
    act(label, () => (method === "PUT" ? put(path, body) : post(path, body)));
  }

  const nodesBox = h("div", {}, h("p", {}, "Reading nodes…"));
  const recovery = h("select", { name: "mode", "aria-label": "Node recovery" },
    h("option", { value: "Automatic" }, "Automatic (HyperPod reboots or replaces faulty nodes)"),
    h("option", { value: "None" }, "None (faulty nodes wait for you)"));
  let groupNames = [];
  const nodeTools = h("div", { class: "actions node-tools" },
    recovery,
    h("button", { type: "button", class: "small secondary", onclick: () =>
      confirmed(`Set node recovery of ${name} to ${recovery.value}?`, "Set node recovery", "PUT", `${base}/node-recovery`, { mode: recovery.value }) }, "Set node recovery"),
    h("button", { type: "button", class: "small secondary", onclick: () =>
      confirmed(`Run a deep health check on every node of ${name}? Nodes under check take no work.`, "Deep health check", "POST", `${base}/nodes/health-checks`, { instance_groups: groupNames }) }, "Deep health check"));
  const nodesSection = wideSection("Nodes", nodeTools, nodesBox);
  // A page of NODE_PAGE nodes at a time. A cluster of more nodes than a page is read from what
  // the node watcher recorded (one indexed query, no AWS call); a smaller one live.
  const NODE_PAGE = 100;
  let nodeSource = "live";
  const nodeCursors = [null]; // the cursor of each page up to the one shown
  let stopNodes = () => {};
  function followNodes() {
    stopNodes();
    const q = new URLSearchParams({ source: nodeSource, limit: String(NODE_PAGE) });
    const after = nodeCursors[nodeCursors.length - 1];
    if (after) q.set("after", after);
    stopNodes = watch(`${base}/nodes?${q}`, paintNodes, shown(nodesBox));
  }
  async function startNodes() {
    try {
      const recorded = await get(`${base}/nodes?source=recorded&limit=1`);
      if (recorded.total > NODE_PAGE) nodeSource = "recorded";
    } catch {
      // not recorded yet, or the cluster is not ready: the live read says which
    }
    followNodes();
  }
  function nodePager(answer, shownCount) {
    const first = (nodeCursors.length - 1) * NODE_PAGE;
    const total = answer.total ?? shownCount;
    const source = answer.source === "recorded"
      ? ` As the node watcher recorded them${answer.observed_at ? ` at ${new Date(answer.observed_at).toLocaleTimeString()}` : ""}.`
      : "";
    return h("div", { class: "actions" },
      h("span", { class: "hint" }, `Nodes ${shownCount ? first + 1 : 0}–${first + shownCount} of ${total}.${source}`),
      nodeCursors.length > 1
        ? h("button", { type: "button", class: "small secondary", onclick: () => { nodeCursors.pop(); followNodes(); } }, "Previous nodes")
        : null,
      answer.next_after
        ? h("button", { type: "button", class: "small secondary", onclick: () => { nodeCursors.push(answer.next_after); followNodes(); } }, "Next nodes")
        : null);
  }
  function paintNodes(answer) {
    const nodes = answer.nodes || [];
    groupNames = [...new Set(nodes.map((n) => n.instance_group).filter(Boolean))];
    if (answer.node_recovery && document.activeElement !== recovery) recovery.value = answer.node_recovery;
    const counts = Object.entries(answer.summary || {}).map(([k, v]) => `${v} ${k}`).join(", ");
    fill(nodesBox,
      h("p", {}, `Node recovery: ${answer.node_recovery || "?"}. ${counts}`),
      nodePager(answer, nodes.length),
      nodes.length
        ? table(
            "Nodes and their health",
            ["Node", "Group", "Health", "Next step", "Actions"],
            nodes.map((n) => {
              const action = (verb, path, note) =>
                h("button", {
                  type: "button",
                  class: `small ${verb === "Reboot" ? "secondary" : "danger"}`,
                  "aria-label": `${verb} ${n.node_id}`,
                  onclick: async () => {
                    const body = { node_ids: [n.node_id] };
                    let plan;
                    try {
                      plan = await dryRun("POST", `${base}/nodes/${path}`, body);
                    } catch (error) {
                      status.textContent = `${verb} ${n.node_id}: ${errorText(error)}`;
                      return;
                    }
                    if (await confirmAction(`${verb} node ${n.node_id}? ${note}`, verb, planLines(plan))) {
                      act(`${verb} ${n.node_id}`, () => post(`${base}/nodes/${path}`, body));
                    }
                  },
                }, verb);
              return h(
                "tr",
                { "data-node": n.node_id },
                h("th", { scope: "row", "data-label": "Node" }, n.node_id, h("br"), h("span", { class: "hint" }, n.instance_type || "")),
                h("td", { "data-label": "Group" }, n.instance_group || ""),
                h("td", { "data-label": "Health" }, badge(n.health), (n.reasons || []).length ? h("span", { class: "hint" }, ` ${n.reasons.join("; ")}`) : null),
                h("td", { "data-label": "Next step" }, n.next_step || "—"),
                h(
                  "td",
                  { "data-label": "Actions", class: "actions" },
                  action("Reboot", "reboot", "Its pods are interrupted."),
                  action("Replace", "replace", "A new instance takes its place; local data is lost."),
                  action("Delete", "delete", "Its group's count drops by one."),
                ),
              );
            }),
          )
        : h("p", {}, "No nodes."),
    );
  }

  // Dependencies
  const depsBox = h("div");
  const depsSection = section("Dependencies", depsBox,
    h("button", {
      type: "button",
      class: "secondary",
      onclick: () => act("Reconcile dependencies", () => post(`${base}/dependencies/reconcile`)),
    }, "Reconcile"));
  function paintDeps(deps) {
    fill(depsBox,
      table(
        "Dependencies",
        ["Component", "Version", "Status", "Updated"],
        deps.map((d) =>
          h(
            "tr",
            {},
            h("th", { scope: "row", "data-label": "Component" }, d.name),
            h("td", { "data-label": "Version" }, d.version || ""),
            h("td", { "data-label": "Status" }, badge(d.status)),
            h("td", { "data-label": "Updated" }, when(d.updated_at)),
          ),
        ),
      ),
    );
  }

  // Storage (S3 buckets of the account)
  const storageBox = h("div");
  const storageSection = section("Storage", storageBox);
  async function loadStorage() {
    try {
      const answer = await get("/storage/buckets?limit=1000");
      const buckets = Array.isArray(answer) ? answer : answer.items || [];
      const bname = h("input", { name: "name", autocomplete: "off", spellcheck: "false" });
      const form = h("form", { novalidate: true, "aria-label": "Create a bucket", class: "inline-form" },
        field("New bucket name", bname, { field: "name" }), formError(), h("button", { type: "submit", class: "secondary" }, "Create bucket"));
      form.addEventListener("submit", async (event) => {
        event.preventDefault();
        clearErrors(form);
        try {
          started(`Create bucket ${bname.value.trim()}`, await post("/storage/buckets", { name: bname.value.trim() }));
          form.reset();
        } catch (error) {
          showErrors(form, error);
        }
      });
      const fsx = cluster.spec && cluster.spec.storage;
      // the cluster's own bucket (mounted at /s3 on its nodes) is not one of the managed buckets
      const own = ((cluster.resources || {}).bucket || {}).bucket;
      fill(storageBox,
        own ? h("p", { class: "own-bucket" }, "The cluster's bucket ", h("code", {}, own), ", mounted at ", h("code", {}, "/s3"), " on every node.") : null,
        fsx && fsx.fsx_capacity_gib ? h("p", {}, `FSx for Lustre: ${fsx.fsx_capacity_gib} GiB`) : h("p", { class: "hint" }, "No FSx for Lustre file system."),
        h("h3", {}, "Managed buckets"),
        buckets.length
          ? h("ul", { class: "plain" }, ...buckets.map((b) => h("li", {}, h("code", {}, b.name), b.region ? ` (${b.region})` : "")))
          : h("p", {}, "None yet."),
        form,
      );
    } catch (error) {
      fill(storageBox, h("p", { class: "form-error" }, errorText(error)));
    }
  }

  const features = featuresPanel(name);
  const claims = storageClaimsPanel(name, status);
  const heatmap = gpuHeatmap(name);
  main.append(
    h("div", { class: "grid" }, groupsSection, features.element, nodesSection, heatmap.element, depsSection, storageSection, claims.element),
  );
  // a cluster that is not active (being made, or its creation cancelled) has no such part yet:
  // said plainly, next to the summary's operation and the next steps, not as a red refusal
  const shown = (box) => ({ cluster: name, failed: (error) => fill(box, error.code === "cluster_not_ready"
    ? h("p", { class: "hint" }, error.message)
    : h("p", { class: "form-error" }, errorText(error))) });
  const stops = [
    watch(base, paintSummary, { cluster: name }),
    watch(`${base}/instance-groups?limit=1000`, paintGroups, shown(groupsBox)),
    () => stopNodes(),
    watch(`${base}/dependencies?limit=1000`, paintDeps, shown(depsBox)),
    onChange(features.reload, { cluster: name }),
    drift.stop,
    claims.stop,
    heatmap.stop,
  ];
  startNodes();
  await loadStorage();
  return () => stops.forEach((stop) => stop());
}
