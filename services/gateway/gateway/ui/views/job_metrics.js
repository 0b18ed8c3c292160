// A job's MLflow metrics on its page: loss and throughput (tokens/s) of its newest run, read
// from GET .../jobs/{job}/runs?metric=..., drawn with the job page's chart (metrics_chart.js).

import { get } from "../api.js";
import { errorText, fill, h, section } from "../dom.js";
import { drawChart } from "./metrics_chart.js";

const METRICS = [
  { key: "loss", label: "Loss", format: (v) => v.toFixed(3) },
  { key: "tokens_per_sec", label: "Throughput (tokens/s)", format: (v) => Math.round(v).toLocaleString("en-US") },
];

// metricsPanel(base) -> {element, refresh}: refresh reads the histories again (until the run
// has finished, after which it keeps what it drew).
export function metricsPanel(base) {
  const body = h("div", { class: "charts" }, h("p", { class: "hint" }, "Metrics appear when the job's run logs its first step."));
  const element = section("Metrics (MLflow)", body);
  let finished = false;
  async function refresh() {
    if (finished) return;
    let answers;
    try {
      answers = await Promise.all(METRICS.map((m) => get(`${base}/runs?metric=${encodeURIComponent(m.key)}`)));
    } catch (error) {
      // no run yet is the normal state of a starting job
      if (error && error.status === 404) return;
      fill(body, h("p", { class: "hint" }, errorText(error)));
      return;
    }
    const run = (answers[0].runs || [])[0];
    if (!run) return;
    finished = run.status === "FINISHED" || run.status === "FAILED" || run.status === "KILLED";
    fill(body,
      h("p", { class: "hint" }, `Run ${run.run_id} (${run.status.toLowerCase()}) on ${answers[0].tracking_uri}`),
      ...METRICS.map((m, i) => chart(m, ((answers[i].history || {}).points || []))));
  }
  return { element, refresh };
}

// One metric by step, with its latest value in words (the chart's text equivalent).
function chart(metric, points) {
  const last = points[points.length - 1];
  const words = last
    ? `${metric.label}: ${metric.format(last.value)} at step ${last.step} (${points.length} steps)`
    : `${metric.label}: no steps yet`;
  const drawn = drawChart([{ label: metric.label, points: points.map((p) => [p.step, p.value]) }]);
  drawn.setAttribute("aria-label", words);
  return h("figure", { class: "metric-chart", "data-metric": metric.key, "data-points": String(points.length), style: "margin:0 0 1rem" },
    drawn, h("figcaption", {}, words));
}
