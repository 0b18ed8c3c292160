// Training: submit a job from a recipe, the cluster's jobs, one job with its restart budget,
// MLflow link and metrics charts, events and live logs over WebSocket (follow, pause, search, download).

import { get, post, del, token } from "../api.js";
import {
  announce, badge, clearErrors, confirmAction, errorText, field, fill, formError, h,
  operationLink, section, showErrors, when,
} from "../dom.js";
import { gpuShareFields } from "../gpu_share.js";
import { pagedTable } from "../paged_table.js";
import { recipeFields } from "../recipe_fields.js";
import { metricsPanel } from "./job_metrics.js";
import { onChange } from "../store.js";
import { jobCharts } from "./metrics_chart.js";

// A group's instance type and the MIG profile its nodes are partitioned into (null: none), from
// its recorded spec: mig_profile, or HyperPod's nvidia.com/mig.config label (all-<profile>).
function groupShare(group) {
  if (!group) return null;
  const spec = group.spec || {};
  const config = (spec.labels || {})["nvidia.com/mig.config"];
  const labelled = config && config !== "all-disabled" ? `mig-${config.replace(/^all-/, "")}` : null;
  return { instance_type: group.instance_type, mig_profile: spec.mig_profile || labelled };
}

export async function render(main, [cluster, job]) {
  if (job) return detail(main, cluster, job);
  const base = `/clusters/${encodeURIComponent(cluster)}/jobs`;
  main.append(
    h("p", { class: "crumbs" }, h("a", { href: "#/clusters" }, "Clusters"), " / ",
      h("a", { href: `#/clusters/${encodeURIComponent(cluster)}` }, cluster), " / Training"),
    h("h1", {}, `Training on ${cluster}`),
  );
  const status = h("div", { class: "notice", role: "status" });
  const jobs = pagedTable({
    path: base,
    caption: "Jobs",
    noun: "jobs",
    empty: "No jobs yet.",
    columns: ["Job", "Recipe", "Status", "Restarts", "Created"],
    key: (j) => j.name,
    row: (j) => h("tr", { "data-job": j.name },
      h("th", { scope: "row", "data-label": "Job" }, h("a", { href: `#/clusters/${encodeURIComponent(cluster)}/jobs/${encodeURIComponent(j.name)}` }, j.name)),
      h("td", { "data-label": "Recipe" }, j.recipe || ""),
      h("td", { "data-label": "Status" }, badge(j.status)),
      h("td", { "data-label": "Restarts" }, `${j.restarts ?? 0} of ${j.budget ?? "?"}`),
      h("td", { "data-label": "Created" }, when(j.created_at))),
  });

  const groups = ((await get(`/clusters/${encodeURIComponent(cluster)}/instance-groups?limit=1000`).catch(() => [])) || []);
  const name = h("input", { name: "name", autocomplete: "off", spellcheck: "false" });
  const recipe = h("select", { name: "recipe" }, ...[["pytorch", "pytorch (torchrun)"], ["shell", "shell script"], ["llama-factory", "llama-factory"], ["ms-swift", "ms-swift (SFT or GRPO)"], ["verl", "verl"]].map(([r, label]) => h("option", { value: r }, label)));
  const typed = recipeFields();
  const group = h("select", { name: "instance_group" }, ...groups.map((g) => h("option", { value: g.name }, `${g.name} (${g.count} × ${g.instance_type})`)));
  const script = h("input", { name: "script", value: "train.py", autocomplete: "off" });
  const replicas = h("input", { name: "replicas", type: "number", min: "1", value: "1" });
  const gpus = h("input", { name: "gpus", type: "number", min: "0", value: "1" });
  const retries = h("input", { name: "job_max_retry_count", type: "number", min: "0", value: "3" });
  const mlflow = h("input", { name: "mlflow_tracking_uri", autocomplete: "off", spellcheck: "false" });
  const extra = h("textarea", { name: "extra", rows: "3", spellcheck: "false" });
  // whole GPUs, a MIG partition of the chosen group's type, or a HAMi share
  const sharing = gpuShareFields({ prefix: "resources.", target: () => groupShare(groups.find((g) => g.name === group.value)) });
  group.addEventListener("change", sharing.update);
  sharing.update();
  const scriptField = field("Script (pytorch)", script, { field: "script" });
  recipe.addEventListener("change", () => {
    scriptField.hidden = recipe.value !== "pytorch";
    typed.show(recipe.value);
  });
  const form = h("form", { novalidate: true, "aria-label": "Submit a job" },
    h("div", { class: "row" },
      field("Job name", name, { field: "name" }),
      field("Recipe", recipe, { field: "recipe" }),
      field("Instance group", group, { field: "instance_group" })),
    typed.element,
    h("div", { class: "row" },
      scriptField,
      field("Replicas", replicas, { field: "replicas" }),
      field("GPUs per replica", gpus, { field: "resources.gpus" }),
      field("Restart budget (job retries)", retries, { field: "run_policy.job_max_retry_count" })),
    sharing.element,
    typed.placement,
    h("details", {}, h("summary", {}, "More"),
      field("MLflow tracking URI", mlflow, { field: "mlflow_tracking_uri" }),
      field("Other recipe fields (JSON object, merged in)", extra, { field: "body", hint: "e.g. {\"model\": \"Qwen/Qwen3-0.6B\", \"dataset\": \"alpaca_en_demo\"} for llama-factory" })),
    formError(),
    h("button", { type: "submit" }, "Submit job"));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearErrors(form);
    const spec = {
      recipe: recipe.value,
      name: name.value.trim(),
      instance_group: group.value,
      replicas: Number(replicas.value),
      resources: { gpus: Number(gpus.value) },
      run_policy: { job_max_retry_count: Number(retries.value) },
    };
    if (recipe.value === "pytorch") spec.script = script.value.trim();
    const unshared = sharing.apply(spec.resources);
    if (unshared) {
      showErrors(form, { fields: [unshared] });
      return;
    }
    typed.apply(spec);
    if (mlflow.value.trim()) spec.mlflow_tracking_uri = mlflow.value.trim();
    if (extra.value.trim()) {
      try {
        Object.assign(spec, JSON.parse(extra.value));
      } catch {
        showErrors(form, { fields: [{ field: "body", message: "Not a JSON object." }] });
        return;
      }
    }
    try {
      const accepted = await post(base, spec);
      fill(status, `Submitted ${spec.name}: `, operationLink(accepted.operation_id, "operation"), " · ",
        h("a", { href: `#/clusters/${encodeURIComponent(cluster)}/jobs/${encodeURIComponent(spec.name)}` }, "job and logs"));
      announce(`Job ${spec.name} submitted`);
    } catch (error) {
      showErrors(form, error);
    }
  });
  main.append(status, section("Submit a job", form), section("Jobs", jobs.element));
  await jobs.load();
  // the list follows its jobs through the live store
  return onChange(jobs.reread, { cluster });
}

const FINISHED = ["succeeded", "failed", "cancelled"];

function podNames(job) {
  return (job.pods || []).map((p) => (typeof p === "string" ? p : p.name)).filter(Boolean);
}

async function detail(main, cluster, jobName) {
  const base = `/clusters/${encodeURIComponent(cluster)}/jobs/${encodeURIComponent(jobName)}`;
  main.append(
    h("p", { class: "crumbs" }, h("a", { href: "#/clusters" }, "Clusters"), " / ",
      h("a", { href: `#/clusters/${encodeURIComponent(cluster)}` }, cluster), " / ",
      h("a", { href: `#/clusters/${encodeURIComponent(cluster)}/jobs` }, "Training"), ` / ${jobName}`),
    h("h1", {}, jobName),
  );
  const status = h("div", { class: "notice", role: "status" });
  const info = h("dl", { class: "summary" });
  const events = h("ul", { class: "plain" });
  // "Cancel job" only while the job can still run
  const cancel = h("button", { type: "button", class: "secondary", hidden: true, onclick: async () => {
    if (await confirmAction(`Cancel job ${jobName}? Its pods are stopped.`, "Cancel job")) {
      post(`${base}/cancel`).then((a) => fill(status, "Cancelling: ", operationLink(a.operation_id))).catch((e) => { status.textContent = errorText(e); });
    }
  } }, "Cancel job");
  main.append(status, section("Job", info,
    h("div", { class: "actions" },
      cancel,
      h("button", { type: "button", class: "danger", onclick: async () => {
        if (await confirmAction(`Delete job ${jobName} and its record?`, "Delete job")) {
          del(base).then((a) => fill(status, "Deleting: ", operationLink(a.operation_id))).catch((e) => { status.textContent = errorText(e); });
        }
      } }, "Delete job"))));

  let job = null;
  let viewer = null;
  let metrics = null;
  const paint = () => {
    const budget = job.restart_budget || { used: job.restarts, allowed: job.budget };
    cancel.hidden = FINISHED.includes(job.status);
    fill(info,
      h("dt", {}, "Status"), h("dd", {}, badge(job.status), job.reason ? ` ${job.reason}` : ""),
      h("dt", {}, "Recipe"), h("dd", {}, job.recipe || ""),
      h("dt", {}, "Restart budget"), h("dd", { class: "budget" }, `${budget.used ?? 0} used of ${budget.allowed ?? "?"}`),
      h("dt", {}, "Pods"), h("dd", {}, podNames(job).join(", ") || "none yet"),
      job.mlflow ? [h("dt", {}, "MLflow"), h("dd", {}, h("a", { href: job.mlflow.tracking_uri, rel: "noopener", target: "_blank" }, `run ${job.mlflow.run_name}`))] : null,
      job.message ? [h("dt", {}, "Message"), h("dd", {}, job.message)] : null);
  };
  const refresh = async () => {
    try {
      job = await get(base);
    } catch (error) {
      status.textContent = errorText(error);
      return;
    }
    paint();
    // a job reporting to MLflow charts its run's loss and throughput above the logs
    if (job.mlflow && !metrics) {
      metrics = metricsPanel(base);
      logsSlot.before(metrics.element);
    }
    if (metrics) metrics.refresh();
    get(`${base}/events`).then((items) => fill(events, ...(items || []).slice(-20).map((e) => {
      const p = e.payload || {};
      const detail = e.message || p.message || p.stage || p.reason || p.kind || "";
      return h("li", {}, when(e.occurred_at || e.time), " ", e.reason || e.type || "", detail ? `: ${detail}` : "");
    }))).catch(() => {});
    // the logs start once the job has pods (the store reads the job again on each event)
    if (!viewer && podNames(job).length) {
      viewer = logsViewer(cluster, jobName, podNames(job));
      fill(logsSlot, viewer.element);
    }
  };
  const logsSlot = h("div", {}, h("p", { class: "hint logs-waiting" }, "Logs appear when the job's pods start."));
  const charts = jobCharts(cluster, jobName);
  main.append(section("GPUs", charts.element), section("Events", events), logsSlot);
  await refresh();
  const stopLive = onChange(refresh, { cluster });
  return () => {
    stopLive();
    charts.stop();
    if (viewer) viewer.stop();
  };
}

// Live logs of the job's pods over WebSocket, resumed from each pod's cursor after a drop.
function logsViewer(cluster, jobName, pods) {
  const lines = [];
  const out = h("pre", { class: "logs", tabindex: "0", "aria-label": "Log lines" });
  const state = h("p", { class: "hint", "aria-live": "polite" });
  const follow = h("input", { type: "checkbox", id: "logs-follow", checked: true });
  const pause = h("button", { type: "button", class: "secondary", "aria-pressed": "false" }, "Pause");
  const search = h("input", { type: "search", id: "logs-search", autocomplete: "off" });
  const download = h("button", { type: "button", class: "secondary" }, "Download");
  const cursors = {};
  let paused = false;
  let held = [];
  let socket = null;
  let stopped = false;
  let ended = new Set();

  function render() {
    const needle = search.value.trim().toLowerCase();
    const shown = needle ? lines.filter((l) => l.toLowerCase().includes(needle)) : lines;
    out.textContent = shown.slice(-5000).join("\n");
    if (follow.checked) out.scrollTop = out.scrollHeight;
  }

  function take(frame) {
    if (frame.type === "lines") {
      cursors[frame.pod] = `${frame.pod}@${frame.uid}:${frame.next}`;
      const tagged = frame.lines.map((l) => (pods.length > 1 ? `[${frame.pod}] ${l}` : l));
      if (paused) held.push(...tagged);
      else {
        lines.push(...tagged);
        render();
      }
    } else if (frame.type === "restarted") {
      lines.push(`--- ${frame.pod} restarted ---`);
      render();
    } else if (frame.type === "end") {
      ended.add(frame.pod);
      state.textContent = `${frame.pod}: ${frame.reason || "ended"}`;
    } else if (frame.type === "error") {
      state.textContent = `${frame.pod || ""} ${frame.message || frame.code} ${frame.hint || ""}`;
    }
  }

  function connect() {
    if (stopped || !pods.length) {
      if (!pods.length) state.textContent = "No pods yet: reload the page when the job has started.";
      return;
    }
    const q = new URLSearchParams();
    for (const p of pods) q.append("pod", p);
    for (const c of Object.values(cursors)) q.append("cursor", c);
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    socket = new WebSocket(
      `${scheme}://${location.host}/api/v1/clusters/${encodeURIComponent(cluster)}/jobs/${encodeURIComponent(jobName)}/logs/ws?${q}`,
      ["hyperpilot.bearer", token()],
    );
    socket.addEventListener("open", () => { state.textContent = "Live"; });
    socket.addEventListener("message", (event) => take(JSON.parse(event.data)));
    socket.addEventListener("close", () => {
      if (stopped || pods.every((p) => ended.has(p))) return;
      state.textContent = "Reconnecting…";
      setTimeout(connect, 1000);
    });
  }

  pause.addEventListener("click", () => {
    paused = !paused;
    pause.textContent = paused ? "Resume" : "Pause";
    pause.setAttribute("aria-pressed", String(paused));
    if (!paused) {
      lines.push(...held);
      held = [];
      render();
    }
  });
  search.addEventListener("input", render);
  follow.addEventListener("change", render);
  download.addEventListener("click", () => {
    const url = URL.createObjectURL(new Blob([[...lines, ...held].join("\n") + "\n"], { type: "text/plain" }));
    const a = h("a", { href: url, download: `${jobName}.log` });
    document.body.append(a);
    a.click();
    a.remove();
    URL.revokeObjectURL(url);
  });

  const element = section("Logs",
    h("div", { class: "actions logs-controls" },
      h("span", { class: "inline" }, follow, h("label", { for: "logs-follow" }, "Follow")),
      pause,
      h("label", { for: "logs-search" }, "Search"), search,
      download),
    state, out);
  connect();
  return {
    element,
    stop() {
      stopped = true;
      if (socket) socket.close();
    },
  };
}
