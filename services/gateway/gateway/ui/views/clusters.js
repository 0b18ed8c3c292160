// Clusters: the fleet overview (views/fleet.js), the list with status, search, switch the active
// one, delete with confirmation, import.

import { del, get, post, put, query } from "../api.js";
import {
  announce, badge, clearErrors, confirmAction, errorText, field, formError, h, operationLink,
  fill, section, showErrors, when,
} from "../dom.js";
import { dryRun, planLines } from "../plan.js";
import { pagedTable } from "../paged_table.js";
import { onChange } from "../store.js";
import { fleetOverview } from "./fleet.js";
import { loadRegions } from "./create.js";
import { progressPanel } from "./progress.js";

export async function render(main) {
  let panel = null;
  const status = h("div", { class: "notice", role: "status" });
  const fleet = fleetOverview();
  const search = h("input", { type: "search", autocomplete: "off", spellcheck: "false", placeholder: "name, region or instance type" });
  const matches = (c) => {
    const text = search.value.trim().toLowerCase();
    const types = ((c.spec && c.spec.instance_groups) || []).map((g) => g.instance_type).join(" ");
    return !text || `${c.name} ${c.region || ""} ${types}`.toLowerCase().includes(text);
  };
  // Every page of the list is read, one after the other (the search and the fleet overview
  // take the whole fleet); only the rows in view are drawn.
  const table = pagedTable({
    path: "/clusters",
    caption: "Clusters and their status",
    label: "Clusters list",
    noun: "clusters",
    empty: "No clusters yet. Create one, or import one that exists.",
    columns: ["Name", "Status", "Region", "Groups", "Created", "Actions"],
    all: true,
    key: (c) => c.name,
    loaded: (clusters) => fleet.read(clusters),
    row: (c) => {
      const link = h("a", { href: `#/clusters/${encodeURIComponent(c.name)}` }, c.name);
      const groups = ((c.spec && c.spec.instance_groups) || [])
        .map((g) => `${g.name}: ${g.count} × ${g.instance_type}`)
        .join(", ");
      const makeActive = c.active
        ? h("span", { class: "badge status-active" }, h("span", { "aria-hidden": "true" }, "★"), " active")
        : h("button", { type: "button", class: "small secondary", "aria-label": `Make active: ${c.name}`, onclick: () => activate(c.name) }, "Make active");
      const remove = h("button", { type: "button", class: "small danger", "aria-label": `Delete ${c.name}`, onclick: () => remove_(c) }, "Delete");
      return h(
        "tr",
        { "data-cluster": c.name },
        h("th", { scope: "row", "data-label": "Name" }, link, c.managed === false ? h("span", { class: "hint" }, " (imported)") : null),
        h("td", { "data-label": "Status" }, badge(c.status)),
        h("td", { "data-label": "Region" }, c.region || ""),
        h("td", { "data-label": "Groups" }, groups),
        h("td", { "data-label": "Created" }, when(c.created_at)),
        h("td", { "data-label": "Actions", class: "actions" }, makeActive, remove),
      );
    },
  });
  search.addEventListener("input", () => {
    const text = search.value.trim();
    table.filter(text ? matches : null);
    fleet.search(matches);
  });

  function showPanel(operationId) {
    if (panel) panel.stop();
    panel = progressPanel(operationId);
    fill(panelSlot, panel.element);
    panel.focus();
  }

  async function activate(name) {
    try {
      await put("/clusters/active", { name });
      status.textContent = `${name} is now the active cluster.`;
      announce(status.textContent);
    } catch (error) {
      status.textContent = errorText(error);
    }
  }

  async function remove_(c) {
    const path = `/clusters/${encodeURIComponent(c.name)}`;
    let plan;
    try {
      plan = await dryRun("DELETE", path);
    } catch (error) {
      status.textContent = errorText(error);
      return;
    }
    const ok = await confirmAction(
      `Delete cluster ${c.name}? ${c.managed === false ? "It is forgotten by Hyperpilot; AWS resources stay." : "Everything Hyperpilot created for it is deleted, nodes included."}`,
      `Delete ${c.name}`,
      planLines(plan),
    );
    if (!ok) return;
    try {
      const accepted = await del(path);
      fill(status, `Deleting ${c.name}. `, operationLink(accepted.operation_id));
      showPanel(accepted.operation_id);
    } catch (error) {
      status.textContent = errorText(error);
    }
  }

  const importRegion = h("select", { name: "region" }, h("option", { value: "" }, "Loading regions…"));
  const eks = h("input", { name: "eks_cluster_name", autocomplete: "off", spellcheck: "false", list: "importable" });
  const hyperpod = h("input", { name: "hyperpod_cluster_name", autocomplete: "off", spellcheck: "false" });
  const importable = h("datalist", { id: "importable" });
  const importForm = h(
    "form",
    { novalidate: true, "aria-label": "Import a cluster" },
    field("Region", importRegion, { field: "region" }),
    field("EKS cluster name", eks, { field: "eks_cluster_name" }),
    importable,
    field("HyperPod cluster name (optional)", hyperpod, { field: "hyperpod_cluster_name" }),
    formError(),
    h("button", { type: "submit" }, "Import"),
  );
  importForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearErrors(importForm);
    const body = { eks_cluster_name: eks.value.trim() };
    if (hyperpod.value.trim()) body.hyperpod_cluster_name = hyperpod.value.trim();
    if (importRegion.value) body.region = importRegion.value;
    try {
      const accepted = await post("/clusters/import", body);
      fill(status, `Importing ${body.eks_cluster_name}. `, operationLink(accepted.operation_id));
      showPanel(accepted.operation_id);
      importForm.reset();
      loadRegions(importRegion).then(loadImportable);
    } catch (error) {
      showErrors(importForm, error);
    }
  });

  const panelSlot = h("div");
  main.append(
    h("div", { class: "title-row" }, h("h1", {}, "Clusters"), h("a", { href: "#/clusters/new", class: "button" }, "Create cluster")),
    status,
    panelSlot,
    h("div", { class: "search-row" }, field("Search clusters", search)),
    section("Fleet", fleet.element),
    table.element,
    section("Import an existing cluster", h("details", {}, h("summary", {}, "Import from this account"), importForm)),
  );
  // the list and the fleet overview follow every change through the live store (this page,
  // REST, the CLI); node health, jobs and endpoints change without the list changing
  table.load();
  const stop = onChange(table.reread);
  // the importable EKS clusters of the region chosen
  function loadImportable() {
    get(`/inspect/clusters${query({ region: importRegion.value })}`)
      .then((found) => {
        fill(importable,
          ...found
            .filter((c) => c.kind === "eks" && c.importable)
            .map((c) => h("option", { value: c.name })),
        );
      })
      .catch(() => {});
  }
  importRegion.addEventListener("change", loadImportable);
  loadRegions(importRegion).then(loadImportable);
  return () => {
    stop();
    table.stop();
    if (panel) panel.stop();
  };
}
