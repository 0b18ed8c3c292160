// The fleet overview of the clusters page: per cluster its GPUs (total, allocated to running
// jobs and endpoints, free), node health, running jobs, endpoints and cost per hour at list
// prices; totals above; sortable by any column, filtered by the page's search box.

import { get } from "../api.js";
import { fill, h } from "../dom.js";
import { describe, LIST_PRICES_SOURCE } from "../instance_types.js";

const RUNNING_JOB = /^(running|pending|starting|restarting|created)$/i;

// One cluster's figures from what the API answers (groups in its spec, nodes, jobs, endpoints).
export function figures(cluster, nodes, jobs, endpoints) {
  const groups = (cluster.spec && cluster.spec.instance_groups) || [];
  let gpus = 0;
  let cost = 0;
  let priced = true;
  for (const g of groups) {
    const t = describe(g.instance_type);
    gpus += (t.gpus || 0) * g.count;
    if (g.count && t.price === null) priced = false;
    else cost += (t.price || 0) * g.count;
  }
  // a model download is a job too, on no GPU
  const running = jobs.filter((j) => RUNNING_JOB.test(j.status) && j.recipe !== "model-download");
  const perPod = (spec) => (spec.resources && spec.resources.gpus !== undefined ? spec.resources.gpus : 1);
  const allocated =
    running.reduce((n, j) => n + perPod(j.spec || {}) * ((j.spec && j.spec.replicas) || 1), 0) +
    endpoints.reduce((n, e) => n + ((e.spec && e.spec.gpus) ?? 1) * (e.replicas || (e.spec && e.spec.replicas) || 1), 0);
  const list = nodes.nodes || [];
  const healthy = list.filter((n) => n.health === "healthy").length;
  return {
    name: cluster.name,
    gpus,
    allocated: Math.min(allocated, gpus),
    free: Math.max(gpus - allocated, 0),
    healthy,
    unhealthy: list.length - healthy,
    jobs: running.length,
    endpoints: endpoints.length,
    cost: priced ? cost : null,
  };
}

const COLUMNS = [
  ["name", "Cluster"], ["gpus", "GPUs"], ["allocated", "Allocated"], ["free", "Free"],
  ["healthy", "Healthy nodes"], ["unhealthy", "Other nodes"], ["jobs", "Running jobs"],
  ["endpoints", "Endpoints"], ["cost", "Cost per hour"],
];

const money = (v) => (v === null ? "no list price" : `$${v.toFixed(2)}`);

export function fleetOverview() {
  let rows = [];
  let keep = () => true;
  let sortKey = "name";
  let ascending = true;
  const totals = h("p", { class: "fleet-totals", "aria-live": "polite" });
  const body = h("tbody");
  const head = h("tr");
  const table = h(
    "table",
    { class: "list fleet" },
    h("caption", { class: "visually-hidden" }, "Fleet overview"),
    h("thead", {}, head),
    body,
  );

  function paint() {
    const shown = rows
      .filter((r) => keep(r.cluster))
      .sort((a, b) => {
        const x = a[sortKey] ?? -1;
        const y = b[sortKey] ?? -1;
        const order = typeof x === "string" ? x.localeCompare(y) : x - y;
        return ascending ? order : -order;
      });
    fill(head, ...COLUMNS.map(([key, label]) => h(
      "th",
      { scope: "col", "aria-sort": key === sortKey ? (ascending ? "ascending" : "descending") : "none" },
      h("button", {
        type: "button", class: "sort", "aria-label": `Sort by ${label.toLowerCase()}`,
        onclick: () => {
          ascending = key === sortKey ? !ascending : key === "name";
          sortKey = key;
          paint();
        },
      }, label, key === sortKey ? h("span", { "aria-hidden": "true" }, ascending ? " ▲" : " ▼") : null),
    )));
    fill(body, ...shown.map((r) => h(
      "tr",
      { "data-fleet": r.name },
      h("th", { scope: "row", "data-label": "Cluster" }, h("a", { href: `#/clusters/${encodeURIComponent(r.name)}` }, r.name)),
      ...COLUMNS.slice(1).map(([key, label]) => h("td", { "data-label": label, "data-key": key }, key === "cost" ? money(r.cost) : String(r[key]))),
    )));
    const sum = (key) => shown.reduce((n, r) => n + r[key], 0);
    const cost = shown.some((r) => r.cost === null) ? null : sum("cost");
    totals.textContent =
      `${shown.length} cluster${shown.length === 1 ? "" : "s"}: ${sum("gpus")} GPUs, ${sum("allocated")} allocated, ` +
      `${sum("free")} free; ${sum("healthy")} healthy nodes, ${sum("unhealthy")} other; ` +
      `${sum("jobs")} running jobs; ${sum("endpoints")} endpoints; ${money(cost)} per hour.`;
  }

  // Read every cluster's nodes and jobs and all endpoints again (the store calls this).
  async function read(clusters) {
    const endpoints = await get("/endpoints?cluster=*").catch(() => []);
    rows = await Promise.all(clusters.map(async (c) => {
      const path = `/clusters/${encodeURIComponent(c.name)}`;
      const [nodes, jobs] = await Promise.all([
        get(`${path}/nodes`).catch(() => ({ nodes: [] })),
        get(`${path}/jobs`).catch(() => []),
      ]);
      return { ...figures(c, nodes, jobs, endpoints.filter((e) => e.cluster === c.name)), cluster: c };
    }));
    paint();
  }

  return {
    element: h("div", { class: "fleet-overview" }, totals, h("div", { class: "table-wrap" }, table),
      h("p", { class: "hint" }, `Cost at ${LIST_PRICES_SOURCE}.`)),
    read,
    // show only the clusters `predicate` keeps (the page's search)
    search(predicate) {
      keep = predicate;
      paint();
    },
  };
}
