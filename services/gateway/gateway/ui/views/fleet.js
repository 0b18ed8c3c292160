// The fleet overview of the clusters page: per cluster its GPUs (total, allocated to running
// jobs and endpoints, free), node health, running jobs, endpoints and cost per hour at list
// prices; totals above; sortable by any column, filtered by the page's search box.
//
// The GPUs and the cost per hour are the capacity API's (GET /capacity: the nodes' allocatable
// GPUs, nodes x its price table), with the price source it names; allocated counts the GPUs the
// running jobs and endpoints ask for (so a deploy shows at once, before its pods exist).

import { get } from "../api.js";
import { fill, h } from "../dom.js";
import { virtualRows } from "../virtual_rows.js";

const RUNNING_JOB = /^(running|pending|starting|restarting|created)$/i;

// One cluster's figures from what the API answers (nodes, jobs, endpoints, and the cluster's
// line of the capacity API, if it has one: a cluster it cannot read has no figures there).
export function figures(cluster, nodes, jobs, endpoints, capacity) {
  const readable = Boolean(capacity && capacity.readable);
  const gpus = readable ? capacity.resources.gpus.total : 0;
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
    // the capacity API's cost of the nodes it read; none for a cluster it could not read
    cost: readable ? capacity.cost_per_hour : null,
  };
}

const COLUMNS = [
  ["name", "Cluster"], ["gpus", "GPUs"], ["allocated", "Allocated"], ["free", "Free"],
  ["healthy", "Healthy nodes"], ["unhealthy", "Other nodes"], ["jobs", "Running jobs"],
  ["endpoints", "Endpoints"], ["cost", "Cost per hour"],
];

// Clusters read at once (two requests each): a browser holds six connections to one host
// (HTTP/1.1), one of them the event stream; a fleet of hundreds leaves one to the list and the
// page's actions.
const READERS = 2;

// `work` of every item, at most `most` at a time, in order; stops starting new ones when
// `going()` turns false (a later read took over).
async function eachAtMost(most, items, going, work) {
  const done = new Array(items.length);
  let next = 0;
  async function worker() {
    while (next < items.length && going()) {
      const i = next;
      next += 1;
      done[i] = await work(items[i]);
    }
  }
  await Promise.all(Array.from({ length: Math.min(most, items.length) }, worker));
  return done;
}

const money = (v) => (v === null ? "not readable" : `$${v.toFixed(2)}`);

export function fleetOverview() {
  let rows = [];
  let keep = () => true;
  let sortKey = "name";
  let ascending = true;
  let reads = 0; // the reads so far: only the last one is shown
  const totals = h("p", { class: "fleet-totals", "aria-live": "polite" });
  // one row per cluster, drawn as it scrolls into view (a fleet of hundreds of clusters)
  const table = virtualRows({
    caption: "Fleet overview",
    label: "Per-cluster GPUs, nodes, jobs and cost",
    className: "list fleet",
    // named before the first read is drawn (a header without text is no header to a reader)
    columns: COLUMNS.map(([, label]) => h("th", { scope: "col" }, label)),
    key: (r) => r.name,
    row: (r) => h(
      "tr",
      { "data-fleet": r.name },
      h("th", { scope: "row", "data-label": "Cluster" }, h("a", { href: `#/clusters/${encodeURIComponent(r.name)}` }, r.name)),
      ...COLUMNS.slice(1).map(([key, label]) => h("td", { "data-label": label, "data-key": key }, key === "cost" ? money(r.cost) : String(r[key]))),
    ),
  });

  function paint() {
    const shown = rows
      .filter((r) => keep(r.cluster))
      .sort((a, b) => {
        const x = a[sortKey] ?? -1;
        const y = b[sortKey] ?? -1;
        const order = typeof x === "string" ? x.localeCompare(y) : x - y;
        return ascending ? order : -order;
      });
    fill(table.head, ...COLUMNS.map(([key, label], column) => h(
      "th",
      { scope: "col", "aria-sort": key === sortKey ? (ascending ? "ascending" : "descending") : "none" },
      h("button", {
        type: "button", class: "sort", "aria-label": `Sort by ${label.toLowerCase()}`,
        onclick: () => {
          ascending = key === sortKey ? !ascending : key === "name";
          sortKey = key;
          paint();
          // the header is drawn again: the focus stays on this column's button
          table.head.children[column].querySelector("button").focus();
        },
      }, label, key === sortKey ? h("span", { "aria-hidden": "true" }, ascending ? " ▲" : " ▼") : null),
    )));
    table.show(shown, rows.length ? "No cluster matches the search." : "No clusters yet.");
    const sum = (key) => shown.reduce((n, r) => n + r[key], 0);
    const unread = shown.filter((r) => r.cost === null).length;
    const cost = `$${shown.reduce((n, r) => n + (r.cost || 0), 0).toFixed(2)} per hour` +
      (unread ? ` (${unread} cluster${unread === 1 ? "" : "s"} not readable)` : "");
    totals.textContent =
      `${shown.length} cluster${shown.length === 1 ? "" : "s"}: ${sum("gpus")} GPUs, ${sum("allocated")} allocated, ` +
      `${sum("free")} free; ${sum("healthy")} healthy nodes, ${sum("unhealthy")} other; ` +
      `${sum("jobs")} running jobs; ${sum("endpoints")} endpoints; ${cost}.`;
  }

  const prices = h("p", { class: "hint fleet-prices" });

  // Read every cluster's nodes and jobs, all endpoints and the fleet's capacity again (the
  // store calls this).
  async function read(clusters) {
    reads += 1;
    const turn = reads;
    const [endpoints, capacity] = await Promise.all([
      get("/endpoints?cluster=*").catch(() => []),
      get("/capacity").catch(() => null),
    ]);
    const lines = new Map(((capacity && capacity.clusters) || []).map((c) => [c.cluster, c]));
    const fresh = await eachAtMost(READERS, clusters, () => turn === reads, async (c) => {
      const path = `/clusters/${encodeURIComponent(c.name)}`;
      const [nodes, jobs] = await Promise.all([
        get(`${path}/nodes`).catch(() => ({ nodes: [] })),
        // the jobs not finished (running ones among them), not the whole history
        get(`${path}/jobs?active=true&limit=1000`).catch(() => []),
      ]);
      const mine = endpoints.filter((e) => e.cluster === c.name);
      return { ...figures(c, nodes, jobs, mine, lines.get(c.name)), cluster: c };
    });
    if (turn !== reads) return; // a later read is under way
    rows = fresh;
    const source = capacity && capacity.prices;
    prices.textContent = source
      ? `Cost per hour of the nodes at list prices (${source.currency}, ${source.region}, published ${source.as_of}): ${source.source}.`
      : "Cost per hour: the capacity API could not be read.";
    paint();
  }

  return {
    element: h("div", { class: "fleet-overview" }, totals, table.element, prices),
    read,
    // show only the clusters `predicate` keeps (the page's search)
    search(predicate) {
      keep = predicate;
      paint();
    },
  };
}
