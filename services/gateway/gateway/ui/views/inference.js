// Inference: deploy an endpoint (self-managed container, SGLang with its router, or managed by
// the HyperPod inference operator), the endpoints of a cluster, one endpoint with its pods,
// model-pool assignment and a try-it box that invokes it.

import { del, get, post, query, request } from "../api.js";
import {
  announce, badge, clearErrors, confirmAction, errorText, field, fill, formError, h,
  operationLink, section, showErrors, when,
} from "../dom.js";
import { fallbackTypes, kedaTriggers, managedOptions } from "../endpoint_options.js";
import { gpuShareFields } from "../gpu_share.js";
import { instanceTypePicker } from "../instance_picker.js";
import { dryRun, planLines } from "../plan.js";
import { onChange } from "../store.js";
import { endpointCharts } from "./metrics_chart.js";

const SERVICES = [
  ["internal", "Internal (inside the cluster)"],
  ["external", "External (a load balancer)"],
  ["model_pool", "Model pool (workers behind a router)"],
];
const serviceName = (value) => (SERVICES.find(([v]) => v === (value || "internal")) || [value, value])[1];

// How to call the endpoint through the gateway (OpenAI-compatible), with the caller's token.
export function curlExample(url) {
  return [
    `curl -X POST '${url}' \\`,
    "  -H \"Authorization: Bearer $HYPERPILOT_TOKEN\" -H 'Content-Type: application/json' \\",
    `  -d '{"messages": [{"role": "user", "content": "Hello"}]}'`,
  ].join("\n");
}

const link = (cluster, name) => `#/endpoints/${encodeURIComponent(cluster)}/${encodeURIComponent(name)}`;

export async function render(main, [cluster, name]) {
  if (cluster && name) return detail(main, cluster, name);
  main.append(h("h1", {}, "Inference endpoints"));
  const status = h("div", { class: "notice", role: "status" });
  const clusters = await get("/clusters?limit=1000").catch(() => []);
  const active = (clusters.find((c) => c.active) || clusters[0] || {}).name || "";
  const clusterSelect = h("select", { name: "cluster" }, ...clusters.map((c) => h("option", { value: c.name, selected: c.name === active }, c.name)));
  const body = h("tbody");

  // The endpoints of every cluster (the select only says where to deploy), read again after
  // each event (the live store).
  async function load() {
    try {
      const lists = await Promise.all(clusters.map(async (c) => {
        const answer = await get(`/endpoints${query({ cluster: c.name })}`);
        const items = Array.isArray(answer) ? answer : answer.items || [];
        return items.map((e) => ({ ...e, cluster: e.cluster || c.name }));
      }));
      const items = lists.flat();
      fill(body, ...items.map((e) => h("tr", { "data-endpoint": e.name, "data-cluster": e.cluster },
        h("th", { scope: "row", "data-label": "Endpoint" }, h("a", { href: link(e.cluster, e.name) }, e.name)),
        h("td", { "data-label": "Cluster" }, e.cluster),
        h("td", { "data-label": "Kind" }, e.kind || ""),
        h("td", { "data-label": "Status" }, badge(e.status)),
        h("td", { "data-label": "Instance type" }, e.instance_type || (e.spec && e.spec.instance_type) || ""),
        h("td", { "data-label": "Updated" }, when(e.updated_at || e.created_at)))));
      if (!items.length) fill(body, h("tr", {}, h("td", { colspan: "6" }, "No endpoints on any cluster.")));
    } catch (error) {
      status.textContent = errorText(error);
    }
  }

  const ename = h("input", { name: "name", autocomplete: "off", spellcheck: "false" });
  const kind = h("select", { name: "kind" },
    h("option", { value: "container" }, "Self-managed (vLLM container)"),
    h("option", { value: "sglang" }, "SGLang with router"),
    h("option", { value: "managed" }, "Managed (HyperPod inference operator)"));
  const picker = instanceTypePicker("Instance type", "instance_type");
  const itype = picker.select;
  // the types offered in the zone of the cluster the endpoint goes to
  async function loadTypes() {
    const target = clusters.find((c) => c.name === clusterSelect.value);
    const zone = target && target.spec && target.spec.availability_zone_id;
    try {
      const offered = await get(`/inspect/instance-types${query({ availability_zone_id: zone })}`);
      picker.set(offered.filter((t) => !zone || (t.availability_zone_ids || []).includes(zone)), itype.value || "ml.g5.8xlarge");
    } catch {
      picker.message("Instance types unavailable");
    }
  }
  // a Deploy clicked while the types load waits for them (the form starts with ml.g5.8xlarge)
  let typesLoaded = loadTypes();
  clusterSelect.addEventListener("change", () => { typesLoaded = loadTypes(); });
  const model = h("input", { name: "model", value: "Qwen/Qwen3-0.6B", autocomplete: "off", spellcheck: "false" });
  const replicas = h("input", { name: "replicas", type: "number", min: "1", value: "1" });
  const gpus = h("input", { name: "gpus", type: "number", min: "1", max: "8", value: "1" });
  // whole GPUs, a MIG partition of the chosen type (on a group partitioned into it), a HAMi share
  const sharing = gpuShareFields({ prefix: "", target: () => ({ instance_type: itype.value }) });
  itype.addEventListener("change", sharing.update);
  const routerPolicy = h("select", { name: "router_policy" }, ...["cache_aware", "round_robin", "random", "power_of_two"].map((p) => h("option", { value: p }, p)));
  const routerField = field("Router policy", routerPolicy, { field: "router.policy" });
  const service = h("select", { name: "service" }, ...SERVICES.map(([value, text]) => h("option", { value }, text)));
  const autoscale = h("input", { type: "checkbox", name: "autoscaling" });
  const minReplicas = h("input", { name: "min_replicas", type: "number", min: "0", max: "64", value: "1" });
  const maxReplicas = h("input", { name: "max_replicas", type: "number", min: "1", max: "64", value: "4" });
  const perReplica = h("input", { name: "requests_per_replica", type: "number", min: "1", value: "10" });
  const triggers = kedaTriggers();
  const fallbacks = fallbackTypes();
  const managedBox = managedOptions();
  const scaling = h("div", { hidden: true },
    h("div", { class: "row" },
      field("Minimum replicas", minReplicas, { field: "autoscaling.min_replicas" }),
      field("Maximum replicas", maxReplicas, { field: "autoscaling.max_replicas" }),
      field("Running requests per replica", perReplica, { field: "autoscaling.requests_per_replica" })),
    triggers.element);
  autoscale.addEventListener("change", () => { scaling.hidden = !autoscale.checked; });
  routerField.hidden = true;
  kind.addEventListener("change", () => {
    routerField.hidden = kind.value !== "sglang";
    managedBox.element.hidden = kind.value !== "managed";
    model.dataset.field = kind.value === "managed" ? "managed" : "container.model";
  });
  const form = h("form", { novalidate: true, "aria-label": "Deploy an endpoint" },
    h("div", { class: "row" },
      field("Endpoint name", ename, { field: "name" }),
      field("Kind", kind, { field: "kind" })),
    picker.element,
    fallbacks.element,
    h("div", { class: "row" },
      field("Model", model, { field: "container.model" }),
      field("Replicas", replicas, { field: "replicas" }),
      field("GPUs per replica", gpus, { field: "gpus" })),
    sharing.element,
    routerField,
    field("Service", service, { field: "service", hint: "Who reaches the endpoint: pods of the cluster, a load balancer, or a model pool's router." }),
    h("label", { class: "check" }, autoscale, " Scale with load (KEDA on the serving metrics)"),
    scaling,
    managedBox.element,
    formError(),
    h("button", { type: "submit" }, "Deploy"));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearErrors(form);
    await typesLoaded;
    const spec = { name: ename.value.trim(), kind: kind.value, instance_type: itype.value, replicas: Number(replicas.value), gpus: Number(gpus.value) };
    if (kind.value === "managed") {
      const id = model.value.trim();
      const slug = id.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 63);
      spec.managed = { model_name: slug, model_source: { type: "huggingface", hf_model_id: id } };
    }
    else spec.container = { engine: kind.value === "sglang" ? "sglang" : "vllm", model: model.value.trim() };
    if (kind.value === "sglang") spec.router = { policy: routerPolicy.value };
    if (service.value !== "internal") spec.service = service.value;
    fallbacks.apply(spec);
    const unshared = sharing.apply(spec);
    if (unshared) {
      showErrors(form, { fields: [unshared] });
      return;
    }
    if (autoscale.checked) {
      const scalingSpec = { min_replicas: Number(minReplicas.value), max_replicas: Number(maxReplicas.value), requests_per_replica: Number(perReplica.value) };
      triggers.apply(scalingSpec);
      // a managed endpoint scales through the operator's spec (managed.autoscaling)
      if (kind.value === "managed") spec.managed.autoscaling = scalingSpec;
      else spec.autoscaling = scalingSpec;
    }
    if (kind.value === "managed") managedBox.apply(spec.managed);
    try {
      const accepted = await post(`/endpoints${query({ cluster: clusterSelect.value })}`, spec);
      fill(status, `Deploying ${spec.name}: `, operationLink(accepted.operation_id, "operation"), " · ", h("a", { href: link(clusterSelect.value, spec.name) }, "endpoint"));
      announce(`Deploying ${spec.name}`);
    } catch (error) {
      showErrors(form, error);
    }
  });

  main.append(
    status,
    h("div", { class: "field" }, h("label", { for: "ep-cluster" }, "Cluster"), Object.assign(clusterSelect, { id: "ep-cluster" })),
    section("Deploy an endpoint", form),
    section("Endpoints of every cluster", h("div", { class: "table-wrap" }, h("table", { class: "list" },
      h("caption", { class: "visually-hidden" }, "Endpoints of every cluster"),
      h("thead", {}, h("tr", {}, ...["Endpoint", "Cluster", "Kind", "Status", "Instance type", "Updated"].map((c) => h("th", { scope: "col" }, c)))),
      body))),
  );
  await load();
  return onChange(load);
}

async function detail(main, cluster, name) {
  const q = query({ cluster });
  const base = `/endpoints/${encodeURIComponent(name)}`;
  main.append(
    h("p", { class: "crumbs" }, h("a", { href: "#/endpoints" }, "Endpoints"), ` / ${cluster} / ${name}`),
    h("h1", {}, name),
  );
  const status = h("div", { class: "notice", role: "status" });
  const info = h("dl", { class: "summary" });
  const podsBox = h("div");
  main.append(status, section("Endpoint", info, h("button", { type: "button", class: "danger", onclick: async () => {
    if (await confirmAction(`Delete endpoint ${name}?`, "Delete endpoint")) {
      del(`${base}${q}`).then((a) => fill(status, "Deleting: ", operationLink(a.operation_id))).catch((e) => { status.textContent = errorText(e); });
    }
  } }, "Delete endpoint")), section("Pods and model pool", podsBox));

  const url = `${location.origin}/api/v1${base}/v1/chat/completions${q}`;
  const replicasBox = h("input", { type: "number", min: "0", max: "64", inputmode: "numeric" });
  const serviceBox = h("select", {}, ...SERVICES.map(([value, text]) => h("option", { value }, text)));
  let current = null;
  const scaleForm = h("form", { novalidate: true, "aria-label": "Scale and expose" },
    h("div", { class: "row" },
      field(`Replicas of ${name}`, replicasBox, { field: "replicas" }),
      field(`Service of ${name}`, serviceBox, { field: "service" })),
    h("p", { class: "actions" },
      h("button", { type: "submit", class: "small secondary" }, "Scale"), " ",
      h("button", { type: "button", class: "small secondary", onclick: () => change({ service: serviceBox.value }) }, "Change service")),
    formError());
  // an unchanged value sends nothing; fewer replicas ask first, with the plan
  async function change(body) {
    const [key] = Object.keys(body);
    if (!current || body[key] === (key === "service" ? current.service : current.replicas)) return;
    try {
      const path = key === "replicas" ? `${base}/scale${q}` : `${base}${q}`;
      const method = key === "replicas" ? "POST" : "PATCH";
      if (key === "replicas" && body.replicas < current.replicas) {
        const plan = await dryRun(method, path, body);
        if (!await confirmAction(`Scale ${name} from ${current.replicas} to ${body.replicas} replicas?`, "Scale", planLines(plan))) return;
      }
      const accepted = await request(method, path, body);
      fill(status, `${key === "replicas" ? "Scaling" : "Changing the service of"} ${name}: `, operationLink(accepted.operation_id, "follow the operation"));
    } catch (error) {
      showErrors(scaleForm, error);
    }
  }
  scaleForm.addEventListener("submit", (event) => {
    event.preventDefault();
    if (replicasBox.value.trim() !== "") change({ replicas: Number(replicasBox.value) });
  });

  async function load() {
    try {
      const ep = await get(`${base}${query({ cluster, live: true })}`);
      const live = ep.live || {};
      const spec = ep.spec || {};
      if (!charts) {
        charts = endpointCharts(cluster, name, (spec.container || {}).engine);
        fill(chartsBox, charts.element);
      }
      const auto = spec.autoscaling;
      const fresh = !current;
      current = { replicas: spec.replicas ?? ep.replicas, service: spec.service || "internal" };
      if (fresh || document.activeElement !== replicasBox) replicasBox.value = String(current.replicas);
      if (fresh || document.activeElement !== serviceBox) serviceBox.value = current.service;
      fill(info,
        h("dt", {}, "Status"), h("dd", {}, badge(live.status || ep.status)),
        h("dt", {}, "Kind"), h("dd", {}, ep.kind || ""),
        h("dt", {}, "Instance type"), h("dd", {}, ep.instance_type || spec.instance_type || ""),
        h("dt", {}, "Service"), h("dd", { class: "ep-service" }, serviceName(spec.service)),
        h("dt", {}, "Replicas"), h("dd", { class: "ep-replicas" }, `${ep.ready_replicas ?? 0} ready of ${ep.replicas ?? spec.replicas}`),
        h("dt", {}, "Scaling"), h("dd", {}, auto ? `with load: ${auto.min_replicas}–${auto.max_replicas} replicas, ${auto.requests_per_replica} running requests each` : "fixed"),
        h("dt", {}, "URL"), h("dd", { class: "wrap ep-url" }, h("code", {}, url)),
        (ep.message || live.message) ? [h("dt", {}, "Message"), h("dd", {}, ep.message || live.message)] : null,
        h("dt", {}, "Address"), h("dd", { class: "wrap" }, ep.address || live.address || (live.service ? `${live.service}:${live.port}` : "—")));
      const pods = live.pods || ep.pods || [];
      fill(podsBox, pods.length ? h("ul", { class: "plain" }, ...pods.map((p) => {
        const pod = typeof p === "string" ? p : p.name;
        const modelInput = h("input", { "aria-label": `Model for ${pod}`, value: (p && p.model) || "", autocomplete: "off" });
        return h("li", { class: "inline" }, h("code", {}, pod), " ", p.phase ? badge(p.phase) : null, modelInput,
          h("button", { type: "button", class: "small secondary", onclick: () =>
            post(`${base}/pool/assign${q}`, { pod, model: modelInput.value.trim() || null })
              .then((a) => fill(status, `Assigning ${pod}: `, operationLink(a.operation_id)))
              .catch((e) => { status.textContent = errorText(e); }) }, "Assign"),
          h("button", { type: "button", class: "small secondary", onclick: () =>
            post(`${base}/pool/unassign${q}`, { pod })
              .then((a) => fill(status, `Unassigning ${pod}: `, operationLink(a.operation_id)))
              .catch((e) => { status.textContent = errorText(e); }) }, "Unassign"));
      })) : h("p", {}, "No pods reported."));
    } catch (error) {
      status.textContent = errorText(error);
    }
  }

  // the charts read the serving engine's own metric names: made once the endpoint is read
  const chartsBox = h("div");
  let charts = null;
  const prompt = h("textarea", { id: "tryit-prompt", rows: "3" }, "Say hello in one sentence.");
  const answer = h("pre", { class: "answer", "aria-live": "polite" });
  const tryForm = h("form", { "aria-label": "Try the endpoint" },
    h("label", { for: "tryit-prompt" }, "Prompt"), prompt,
    formError(),
    h("button", { type: "submit" }, "Send"), answer);
  tryForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearErrors(tryForm);
    answer.textContent = "…";
    try {
      const reply = await post(`${base}/invoke${q}`, { messages: [{ role: "user", content: prompt.value }] });
      const text = reply && reply.choices && reply.choices[0] && reply.choices[0].message
        ? reply.choices[0].message.content
        : JSON.stringify(reply, null, 2);
      answer.textContent = text;
    } catch (error) {
      answer.textContent = "";
      showErrors(tryForm, error);
    }
  });
  main.append(
    section("Scaling and service", scaleForm),
    section("Call it", h("pre", { class: "curl", role: "group", "aria-label": "curl example" }, curlExample(url))),
    section("Try it", tryForm),
    section("Requests, replicas and GPUs", chartsBox),
  );
  await load();
  const stopLive = onChange(load, { cluster });
  return () => {
    stopLive();
    if (charts) charts.stop();
  };
}
