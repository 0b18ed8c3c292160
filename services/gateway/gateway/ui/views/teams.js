// Teams of a cluster (task governance): each team's quota per instance type, what it uses,
// borrows and could lend (its Kueue ClusterQueue), its sharing and priority settings; kept
// current by the event stream. Admins create, edit and delete a team, each confirmed with the
// dry-run plan's diff; other roles read only (the admin-only token list answers 403 for them).

import { del, get, patch, post } from "../api.js";
import {
  announce, badge, clearErrors, confirmAction, errorText, field, fill, formError, h, operationLink,
  section, showErrors,
} from "../dom.js";
import { dryRun, planLines } from "../plan.js";
import { watch } from "../store.js";

const SHARING = ["LendAndBorrow", "Lend", "DontLend"];
const n = (v) => (Number.isInteger(v) ? String(v) : String(Math.round(v * 100) / 100));

function quotaText(resources) {
  return (resources || []).map((r) => {
    if (r.count !== undefined && r.count !== null) return `${r.count} × ${r.instance_type}`;
    if (r.mig) return `${r.mig.count} ${r.mig.profile} on ${r.instance_type}`;
    if (r.accelerators !== undefined && r.accelerators !== null) return `${r.accelerators} GPUs of ${r.instance_type}`;
    return `${r.vcpu ?? "?"} vCPU / ${r.memory_gib ?? "?"} GiB of ${r.instance_type}`;
  }).join(", ");
}

function usageText(usage) {
  if (!usage || !usage.length) return "nothing in use";
  return usage.map((u) => {
    const what = u.resource === "nvidia.com/gpu" ? "GPUs" : u.resource.replace(/^nvidia\.com\//, "");
    return `${u.instance_type}: ${n(u.used)} of ${n(u.quota)} ${what}`;
  }).join("; ");
}

function sharingText(team) {
  const borrowed = (team.usage || []).reduce((sum, u) => sum + (u.borrowed || 0), 0);
  const idle = (team.usage || []).reduce((sum, u) => sum + (u.idle || 0), 0);
  const parts = [team.sharing || "LendAndBorrow"];
  if (team.sharing === "LendAndBorrow" && team.borrow_limit !== null && team.borrow_limit !== undefined) {
    parts.push(`borrows up to ${team.borrow_limit}%`);
  }
  if (borrowed) parts.push(`borrowing ${n(borrowed)}`);
  if (team.sharing !== "DontLend" && idle) parts.push(`${n(idle)} idle to lend`);
  return parts.join(", ");
}

// The plan in words: each setting of the team before and after, then the AWS calls and notes.
const LABELS = {
  resources: "quota", sharing: "sharing", borrow_limit: "borrow limit (%)", preempt: "preemption",
  fair_share_weight: "fair-share weight", active: "active",
};

function teamLines(plan, current = null) {
  const change = (plan.diff || {}).team;
  if (!change) return planLines(plan);
  const before = change.actual && typeof change.actual === "object" ? change.actual : current || {};
  const after = change.requested;
  const lines = [];
  if (!after) {
    lines.push(`the team and its quota of ${quotaText(before.resources) || "nothing"} are deleted`);
  } else {
    for (const [key, label] of Object.entries(LABELS)) {
      const was = key === "resources" ? quotaText(before.resources) : before[key];
      const will = key === "resources" ? quotaText(after.resources) : after[key];
      if (will === null || will === undefined || JSON.stringify(was) === JSON.stringify(will)) continue;
      lines.push(`${label}: ${was === null || was === undefined || was === "" ? "none" : was} -> ${will}`);
    }
  }
  const calls = plan.calls || [];
  if (calls.length) {
    lines.push(`${calls.length} AWS call${calls.length === 1 ? "" : "s"}: ${calls.map((c) => `${c.service} ${c.operation}`).join(", ")}`);
  }
  lines.push(...(plan.notes || []));
  if (plan.noop) lines.push("Nothing to change: the team already has these settings.");
  return lines;
}

// The form's body: only what it says; for an edit, only what differs from the team.
function teamForm({ team = null, types = [], onSubmit }) {
  const first = (team?.resources || [])[0] || {};
  const name = h("input", { name: "name", autocomplete: "off", spellcheck: "false", value: team?.name || "", pattern: "[a-z0-9]([-a-z0-9]*[a-z0-9])?" });
  if (team) name.disabled = true;
  const type = h("select", { name: "instance_type" }, ...types.map((t) => h("option", { value: t, selected: t === first.instance_type }, t)));
  const unit = h("select", { name: "unit" },
    h("option", { value: "count", selected: first.count !== undefined && first.count !== null }, "instances"),
    h("option", { value: "accelerators", selected: first.accelerators !== undefined && first.accelerators !== null }, "GPUs"));
  const amount = h("input", { name: "amount", type: "number", min: "0", inputmode: "numeric", value: String(first.count ?? first.accelerators ?? 1) });
  const sharing = h("select", { name: "sharing" }, ...SHARING.map((s) => h("option", { value: s, selected: s === (team?.sharing || "LendAndBorrow") }, s)));
  const borrow = h("input", { name: "borrow_limit", type: "number", min: "1", max: "500", inputmode: "numeric", value: team?.borrow_limit ?? "" });
  const form = h("form", { novalidate: true, "aria-label": team ? `Edit team ${team.name}` : "Create a team" },
    team ? null : field("Name", name, { field: "name", hint: "Lower case, digits and dashes; its namespace is hyperpod-ns-<name>." }),
    h("div", { class: "row" },
      field("Instance type", type, { field: "resources.0.instance_type" }),
      field("Quota", amount, { field: "resources.0" }),
      field("In", unit, { field: "resources.0.unit" })),
    h("div", { class: "row" },
      field("Sharing", sharing, { field: "sharing", hint: "Lend: idle quota goes to others; LendAndBorrow: also borrows." }),
      field("Borrow limit (%)", borrow, { field: "borrow_limit", hint: "With LendAndBorrow; empty: the default." })),
    formError(),
    h("button", { type: "submit" }, team ? "Save team" : "Create team"));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearErrors(form);
    const resource = { instance_type: type.value, [unit.value]: Number(amount.value) };
    const body = {};
    if (!team) body.name = name.value.trim();
    const same = team && first.instance_type === resource.instance_type && first[unit.value] === resource[unit.value]
      && (team.resources || []).length === 1;
    if (!same) body.resources = [resource];
    if (!team || sharing.value !== team.sharing) body.sharing = sharing.value;
    if (borrow.value !== "" && (!team || Number(borrow.value) !== team.borrow_limit)) body.borrow_limit = Number(borrow.value);
    try {
      await onSubmit(body);
    } catch (error) {
      showErrors(form, error);
    }
  });
  return form;
}

export async function render(main, [cluster]) {
  const base = `/clusters/${encodeURIComponent(cluster)}`;
  const status = h("div", { class: "notice", role: "status" });
  const policy = h("p", { class: "hint" });
  const body = h("tbody");
  const table = h("table", { class: "list", "aria-label": "Teams" },
    h("thead", {}, h("tr", {}, ...["Team", "Quota", "Usage", "Sharing", "Preemption", "Status", "Actions"].map((t) => h("th", { scope: "col" }, t)))),
    body);
  const editor = h("div");
  main.append(
    h("p", { class: "crumbs" }, h("a", { href: "#/clusters" }, "Clusters"), " / ",
      h("a", { href: `#/clusters/${encodeURIComponent(cluster)}` }, cluster), " / Teams"),
    h("h1", {}, "Teams"),
    status,
    section("Task governance", policy),
    section("Teams", table, editor),
  );
  const admin = await get("/tokens?limit=1").then(() => true, () => false);
  const groups = await get(`${base}/instance-groups?limit=1000`).catch(() => []);
  const types = [...new Set(groups.map((g) => g.instance_type))];

  async function submitted(what, method, path, requestBody, verb, current = null) {
    const plan = await dryRun(method, path, requestBody);
    const ok = await confirmAction(`${verb} on ${cluster}?`, verb, teamLines(plan, current));
    if (!ok) return;
    const call = { POST: post, PATCH: patch }[method];
    const accepted = method === "DELETE" ? await del(path) : await call(path, requestBody);
    fill(status, `${what}: `, operationLink(accepted.operation_id, "follow the operation"));
    announce(`${what} started`);
    fresh();
  }

  function fresh() {
    if (!admin) {
      fill(editor, h("p", { class: "hint" }, "Changing teams needs an admin token; this one reads only."));
      return;
    }
    fill(editor, h("h3", {}, "New team"), teamForm({
      types,
      onSubmit: (team) => submitted(`Creation of team ${team.name}`, "POST", `${base}/teams`, team, `Create team ${team.name}`),
    }));
  }

  function edit(team) {
    fill(editor, h("h3", {}, `Edit ${team.name}`), teamForm({
      team,
      types,
      onSubmit: (change) => submitted(`Update of team ${team.name}`, "PATCH", `${base}/teams/${encodeURIComponent(team.name)}`, change, `Update team ${team.name}`, team),
    }));
    editor.querySelector("select, input")?.focus();
  }

  async function remove(team) {
    try {
      await submitted(`Deletion of team ${team.name}`, "DELETE", `${base}/teams/${encodeURIComponent(team.name)}`, undefined, `Delete team ${team.name}`, team);
    } catch (error) {
      fill(status, h("span", { class: "form-error", role: "alert" }, errorText(error)));
    }
  }

  function show(read) {
    const tg = read.task_governance || {};
    const classes = (tg.priority_classes || []).map((p) => `${p.name} ${p.weight}`).join(", ");
    fill(policy, tg.enabled
      ? `Enabled (add-on ${tg.addon_status || "unknown"}); priority classes: ${classes || "none"}; fair share ${tg.fair_share ? "on" : "off"}.`
      : "Task governance is not enabled on this cluster: enable it (PATCH /api/v1/clusters/{name}/task-governance) before creating teams.");
    fill(body, ...(read.teams || []).map((t) => h("tr", { "data-team": t.name },
      h("th", { scope: "row", "data-label": "Team" }, t.name),
      h("td", { "data-label": "Quota" }, quotaText(t.resources)),
      h("td", { "data-label": "Usage" }, usageText(t.usage)),
      h("td", { "data-label": "Sharing" }, sharingText(t)),
      h("td", { "data-label": "Preemption" }, t.preempt || "LowerPriority"),
      h("td", { "data-label": "Status" }, badge(t.active === false ? "disabled" : t.status)),
      h("td", {}, admin
        ? h("span", { class: "actions" },
          h("button", { type: "button", class: "secondary", onclick: () => edit(t) }, "Edit"),
          h("button", { type: "button", class: "danger", onclick: () => remove(t) }, "Delete"))
        : null))));
    if (!(read.teams || []).length) fill(body, h("tr", {}, h("td", { colspan: "7" }, "No teams yet.")));
  }

  fresh();
  return watch(`${base}/teams?limit=1000`, show, {
    cluster,
    failed: (error) => fill(status, h("span", { class: "form-error", role: "alert" }, errorText(error))),
  });
}
