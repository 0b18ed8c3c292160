// Live metric charts (SVG, no library): a range query of the cluster's metrics route drawn as
// one line per series, read again every few seconds. A job page shows its GPUs' utilization
// and memory per node; an endpoint page its requests a second, latency (p50/p95 from vLLM's
// histogram), ready replicas and its pods' GPUs. Needs the observability feature: when it is
// off the chart says so.

import { get, query } from "../api.js";
import { h } from "../dom.js";

const SVG = "http://www.w3.org/2000/svg";
const WIDTH = 560;
const HEIGHT = 160;
const PAD = { left: 44, right: 8, top: 8, bottom: 22 };
const COLORS = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#ca8a04", "#db2777"];
const REFRESH_MS = 3000;
const ENDED_S = 15; // a live series has a point every step (5 s) and a sample every scrape

// a value as a label: whole numbers as they are, small fractions (0.2 requests/s) with two digits
const fmt = (v) => (Math.abs(v) < 10 && !Number.isInteger(v) ? v.toFixed(2) : String(Math.round(v)));

export function svg(tag, attrs = {}) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  return el;
}

// Draw `series` ([{label, points: [[t, v], ...]}]) into a fresh <svg>; `max` fixes the scale.
export function drawChart(series, { max = null, unit = "" } = {}) {
  const root = svg("svg", { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, class: "chart", role: "img" });
  const all = series.flatMap((s) => s.points);
  const w = WIDTH - PAD.left - PAD.right;
  const hgt = HEIGHT - PAD.top - PAD.bottom;
  const top = max ?? Math.max(1, ...all.map((p) => p[1]));
  const t0 = all.length ? Math.min(...all.map((p) => p[0])) : 0;
  const t1 = all.length ? Math.max(...all.map((p) => p[0])) : 1;
  const x = (t) => PAD.left + (t1 === t0 ? w : ((t - t0) / (t1 - t0)) * w);
  const y = (v) => PAD.top + hgt - (Math.min(v, top) / top) * hgt;
  for (const frac of [0, 0.5, 1]) {
    const gy = PAD.top + hgt - frac * hgt;
    root.append(svg("line", { x1: PAD.left, x2: WIDTH - PAD.right, y1: gy, y2: gy, stroke: "#d0d7de", "stroke-width": "1" }));
    const label = svg("text", { x: PAD.left - 4, y: gy + 4, "text-anchor": "end", "font-size": "11", fill: "#57606a" });
    label.textContent = `${fmt(top * frac)}${unit}`;
    root.append(label);
  }
  series.forEach((s, i) => {
    if (!s.points.length) return;
    const d = s.points.map((p, j) => `${j ? "L" : "M"}${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join(" ");
    const line = svg("path", { d, fill: "none", stroke: COLORS[i % COLORS.length], "stroke-width": "2", "data-series": s.label });
    const title = svg("title");
    title.textContent = `${s.label}: ${s.points[s.points.length - 1][1]}${unit}`;
    line.append(title);
    const [lt, lv] = s.points[s.points.length - 1];
    root.append(line, svg("circle", { cx: x(lt).toFixed(1), cy: y(lv).toFixed(1), r: "3", fill: COLORS[i % COLORS.length] }));
  });
  root.setAttribute("aria-label", series.map((s) => `${s.label} ${s.points.length ? s.points[s.points.length - 1][1] : "-"}${unit}`).join("; ") || "no data");
  return root;
}

// the line's colour (set through the CSSOM: the page's policy refuses style attributes)
export function swatch(color) {
  const el = h("span", { class: "swatch", "aria-hidden": "true" });
  el.style.background = color;
  return el;
}

function legend(series, unit) {
  return h("ul", { class: "plain chart-legend" }, ...series.map((s, i) => h("li", { "data-series": s.label },
    swatch(COLORS[i % COLORS.length]),
    `${s.label}: `, h("strong", {}, s.now === null ? "ended" : `${fmt(s.now)}${unit}`))));
}

// A live chart of `promql` over the last `window`; `labelOf(metric)` names a series, or
// `seriesOf(result)` turns the whole answer into series ([{label, points}]).
export function liveChart(cluster, { title, promql, labelOf, seriesOf = null, max = null, unit = "", window = "5m", step = "5s" }) {
  const frame = h("figure", { class: "metric-chart", "data-chart": title });
  const caption = h("figcaption", {}, title);
  const body = h("div", { class: "chart-body" }, h("p", { class: "hint" }, "Reading metrics…"));
  frame.append(caption, body);
  let timer = null;
  let stopped = false;
  async function paint() {
    try {
      const answer = await get(`/clusters/${encodeURIComponent(cluster)}/metrics/query${query({ query: promql, window, step })}`);
      const series = seriesOf ? seriesOf(answer.data.result) : answer.data.result.map((r) => ({
        label: labelOf(r.metric),
        points: r.values.map(([t, v]) => [Number(t), Number(v)]),
      }));
      // a series' value now, or null when it ended (no point in the last ENDED_S: its pod is gone)
      const now = Date.now() / 1000;
      for (const s of series) {
        const last = s.points[s.points.length - 1];
        s.now = last && now - last[0] <= ENDED_S ? last[1] : null;
      }
      frame.dataset.latest = JSON.stringify(Object.fromEntries(series.map((s) => [s.label, s.now])));
      frame.dataset.points = String(Math.min(...series.map((s) => s.points.length)));
      body.replaceChildren(series.length ? drawChart(series, { max, unit }) : h("p", { class: "hint" }, "No samples yet."), legend(series, unit));
    } catch (error) {
      const off = error.status === 409;
      body.replaceChildren(h("p", { class: "hint" }, off
        ? "Metrics need the observability feature (cluster page, Managed features)."
        : `Metrics unavailable: ${error.message || error}`));
    }
    if (!stopped) timer = setTimeout(paint, REFRESH_MS);
  }
  paint();
  return { element: frame, stop: () => { stopped = true; clearTimeout(timer); } };
}

const node = (m) => (m.Hostname || "?").replace(/^hyperpod-/, "");

const podLabel = (m) => m.pod || "?";

// histogram_quantile as Prometheus computes it: `buckets` [[le, cumulative count]] sorted by
// le (the last +Inf); linear within the bucket the rank falls in, whose lower bound is the
// previous bucket's (0 for the first); in the +Inf bucket, the last finite bound. null: no data.
export function quantile(q, buckets) {
  const total = buckets.length ? buckets[buckets.length - 1][1] : 0;
  if (!(total > 0)) return null;
  const rank = q * total;
  let lower = 0;
  let below = 0;
  for (const [le, count] of buckets) {
    if (count >= rank) {
      if (le === Infinity) return lower;
      return count === below ? le : lower + (le - lower) * ((rank - below) / (count - below));
    }
    lower = le;
    below = count;
  }
  return lower;
}

// p50 and p95 (ms) at each step of `sum by (le) (rate(..._bucket[w]))` over a range
export function latencySeries(result) {
  const steps = new Map();
  for (const r of result) {
    const le = r.metric.le === "+Inf" ? Infinity : Number(r.metric.le);
    for (const [t, v] of r.values) {
      if (!steps.has(t)) steps.set(t, []);
      steps.get(t).push([le, Number(v)]);
    }
  }
  const times = [...steps.keys()].sort((a, b) => a - b);
  return [["p50", 0.5], ["p95", 0.95]].map(([label, q]) => ({
    label,
    points: times.flatMap((t) => {
      const v = quantile(q, steps.get(t).sort((a, b) => a[0] - b[0]));
      return v === null ? [] : [[Number(t), Math.round(v * 1000)]];
    }),
  }));
}

// Each serving engine's request metrics under its own names (vLLM's docs "Production Metrics";
// SGLang's docs/references/production_metrics.md): requests finished, end-to-end latency
// histogram, and a gauge every ready server exports (counted: the ready replicas).
const ENGINE_METRICS = {
  vllm: { done: "vllm:request_success_total", latency: "vllm:e2e_request_latency_seconds", running: "vllm:num_requests_running" },
  sglang: { done: "sglang:num_requests_total", latency: "sglang:e2e_request_latency_seconds", running: "sglang:num_running_reqs" },
};

// The charts of an endpoint: the requests its model servers answered a second, their latency
// (p50/p95 of the engine's e2e latency histogram), its ready replicas (the model servers the
// collector scrapes), and its pods' GPUs (a model server is busy with the requests it answers)
// and the memory each holds. `engine` is the endpoint's container engine (vllm by default).
export function endpointCharts(cluster, endpoint, engine) {
  const pods = `pod=~"${endpoint}-.*"`;
  const served = `endpoint="${endpoint}"`;
  const m = ENGINE_METRICS[engine] || ENGINE_METRICS.vllm;
  const charts = [
    liveChart(cluster, { title: "Requests per second", promql: `sum(rate(${m.done}{${served}}[1m]))`, labelOf: () => "requests/s" }),
    liveChart(cluster, { title: "Request latency (ms)", promql: `sum by (le) (rate(${m.latency}_bucket{${served}}[1m]))`, seriesOf: latencySeries, unit: " ms" }),
    liveChart(cluster, { title: "Ready replicas", promql: `count(${m.running}{${served}})`, labelOf: () => "replicas" }),
    liveChart(cluster, { title: "GPU utilization per pod (%)", promql: `avg by (pod) (DCGM_FI_DEV_GPU_UTIL{${pods}})`, labelOf: podLabel, max: 100, unit: "%" }),
    liveChart(cluster, { title: "GPU memory held per pod (MiB)", promql: `sum by (pod) (DCGM_FI_DEV_FB_USED{${pods}})`, labelOf: podLabel }),
  ];
  return {
    element: h("div", { class: "charts" }, ...charts.map((c) => c.element)),
    stop: () => charts.forEach((c) => c.stop()),
  };
}

// The GPU charts of a training job: utilization and framebuffer memory per node.
export function jobCharts(cluster, job) {
  const pods = `pod=~"${job}-.*"`;
  const charts = [
    liveChart(cluster, { title: "GPU utilization per node (%)", promql: `avg by (Hostname) (DCGM_FI_DEV_GPU_UTIL{${pods}})`, labelOf: node, max: 100, unit: "%" }),
    liveChart(cluster, { title: "GPU memory used per node (MiB)", promql: `sum by (Hostname) (DCGM_FI_DEV_FB_USED{${pods}})`, labelOf: node, unit: "" }),
  ];
  return {
    element: h("div", { class: "charts" }, ...charts.map((c) => c.element)),
    stop: () => charts.forEach((c) => c.stop()),
  };
}
