// The cluster page's GPU heatmap (SVG, no library): one row per node, one column per time
// bucket over the last minutes, each cell coloured by the node's mean GPU utilization in that
// bucket, from one range query of the cluster's metrics route
// (`avg by (Hostname) (avg_over_time(DCGM_FI_DEV_GPU_UTIL[step]))`), read again every few
// seconds. Shown only when the observability feature is on (the route answers 409 otherwise),
// with a legend and the same numbers as a table.

import { get, query } from "../api.js";
import { h, section } from "../dom.js";
import { svg, swatch } from "./metrics_chart.js";

const WINDOW = "15m";
const STEP = "30s";
const REFRESH_MS = 5000;
const CELL_H = 18;
const LABEL_W = 150;
const WIDTH = 560;
// five bands of utilization, light to dark (each with its own legend entry)
const BANDS = [
  { upto: 20, color: "#dbeafe", label: "0-20 %" },
  { upto: 40, color: "#93c5fd", label: "20-40 %" },
  { upto: 60, color: "#3b82f6", label: "40-60 %" },
  { upto: 80, color: "#1d4ed8", label: "60-80 %" },
  { upto: Infinity, color: "#1e3a8a", label: "80-100 %" },
];
const NO_SAMPLE = "#f6f8fa";

export const band = (v) => BANDS.find((b) => v < b.upto) || BANDS[BANDS.length - 1];

const nodeName = (m) => (m.Hostname || "?").replace(/^hyperpod-/, "");

// rows [{node, cells: Map(t -> v)}] and the sorted columns (t) of a matrix answer
export function grid(result) {
  const times = new Set();
  const rows = result.map((r) => {
    const cells = new Map();
    for (const [t, v] of r.values) {
      const value = Number(v);
      if (Number.isFinite(value)) { cells.set(Number(t), value); times.add(Number(t)); }
    }
    return { node: nodeName(r.metric), cells };
  }).sort((a, b) => a.node.localeCompare(b.node));
  return { rows, columns: [...times].sort((a, b) => a - b) };
}

const clock = (t) => new Date(t * 1000).toISOString().slice(11, 16);

function draw({ rows, columns }) {
  const height = rows.length * CELL_H + 20;
  const cellW = columns.length ? (WIDTH - LABEL_W) / columns.length : 0;
  const root = svg("svg", { viewBox: `0 0 ${WIDTH} ${height}`, class: "heatmap", role: "img" });
  rows.forEach((row, i) => {
    const y = i * CELL_H;
    const label = svg("text", { x: LABEL_W - 6, y: y + CELL_H - 5, "text-anchor": "end", "font-size": "11", fill: "#24292f" });
    label.textContent = row.node;
    root.append(label);
    columns.forEach((t, j) => {
      const v = row.cells.get(t);
      const cell = svg("rect", {
        x: (LABEL_W + j * cellW).toFixed(1), y: y + 1, width: Math.max(cellW - 1, 1).toFixed(1), height: CELL_H - 2,
        fill: v === undefined ? NO_SAMPLE : band(v).color, "data-node": row.node, "data-value": v === undefined ? "" : String(Math.round(v)),
      });
      const title = svg("title");
      title.textContent = `${row.node} at ${clock(t)}: ${v === undefined ? "no sample" : `${Math.round(v)} %`}`;
      cell.append(title);
      root.append(cell);
    });
  });
  if (columns.length) {
    for (const [t, anchor, x] of [[columns[0], "start", LABEL_W], [columns[columns.length - 1], "end", WIDTH]]) {
      const tick = svg("text", { x, y: height - 4, "text-anchor": anchor, "font-size": "11", fill: "#57606a" });
      tick.textContent = clock(t);
      root.append(tick);
    }
  }
  const summary = rows.map((r) => {
    const values = [...r.cells.values()];
    const mean = values.length ? Math.round(values.reduce((a, b) => a + b, 0) / values.length) : null;
    return `${r.node} ${mean === null ? "no samples" : `mean ${mean} %`}`;
  });
  root.setAttribute("aria-label", `GPU utilization per node over the last ${WINDOW}: ${summary.join("; ") || "no nodes"}`);
  return root;
}

function legend() {
  return h("ul", { class: "plain chart-legend", "aria-label": "Colour legend" },
    ...BANDS.map((b) => h("li", {}, swatch(b.color), b.label)),
    h("li", {}, swatch(NO_SAMPLE), "no sample"));
}

// the same numbers as a table: each node's latest, mean and peak utilization over the window
function numbers({ rows, columns }) {
  const last = columns[columns.length - 1];
  return h("details", { class: "heatmap-table" }, h("summary", {}, "As a table"),
    h("table", {}, h("caption", {}, `GPU utilization per node, last ${WINDOW} (%)`),
      h("thead", {}, h("tr", {}, ...["Node", "Now", "Mean", "Peak"].map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, ...rows.map((r) => {
        const values = [...r.cells.values()];
        const now = r.cells.get(last);
        const mean = values.length ? values.reduce((a, b) => a + b, 0) / values.length : null;
        return h("tr", { "data-node": r.node }, h("th", { scope: "row" }, r.node),
          h("td", {}, now === undefined ? "—" : String(Math.round(now))),
          h("td", {}, mean === null ? "—" : String(Math.round(mean))),
          h("td", {}, values.length ? String(Math.round(Math.max(...values))) : "—"));
      }))));
}

// The heatmap section of cluster `name`: {element, stop}; hidden until the route answers.
export function gpuHeatmap(name) {
  const body = h("figure", { class: "metric-chart", "data-chart": "GPU heatmap" },
    h("figcaption", {}, `Mean GPU utilization per node, last ${WINDOW} (${STEP} buckets)`));
  const frame = section("GPU utilization", body);
  frame.hidden = true;
  const promql = `avg by (Hostname) (avg_over_time(DCGM_FI_DEV_GPU_UTIL[${STEP}]))`;
  let timer = null;
  let stopped = false;
  async function paint() {
    try {
      const answer = await get(`/clusters/${encodeURIComponent(name)}/metrics/query${query({ query: promql, window: WINDOW, step: STEP })}`);
      const data = grid(answer.data.result);
      body.dataset.nodes = String(data.rows.length);
      body.dataset.columns = String(data.columns.length);
      body.replaceChildren(body.firstChild,
        data.rows.length ? draw(data) : h("p", { class: "hint" }, "No GPU samples yet."),
        legend(), numbers(data));
      frame.hidden = false;
    } catch (error) {
      // off (409): no heatmap at all; anything else is said where the heatmap would be
      frame.hidden = error.status === 409;
      if (!frame.hidden) body.replaceChildren(body.firstChild, h("p", { class: "hint" }, `Metrics unavailable: ${error.message || error}`));
    }
    if (!stopped) timer = setTimeout(paint, REFRESH_MS);
  }
  paint();
  return { element: frame, stop: () => { stopped = true; clearTimeout(timer); } };
}
