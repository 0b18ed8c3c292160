// The endpoint form's options beyond the basics, each sent only when set: fallback instance
// types; KEDA triggers (queue depth, request rate, GPU utilization) beside the running-requests
// one; and for managed endpoints (the HyperPod inference operator) TLS and DNS, data capture and
// disaggregated prefill/decode. Field names are the API's (shared/contracts/inference.py), so
// its errors land at them.

import { field, h } from "./dom.js";

const num = (input) => (input.value.trim() === "" ? null : Number(input.value));
const text = (input) => input.value.trim();

function check(label, name, checked = false) {
  const box = h("input", { type: "checkbox", name, checked });
  return { box, element: h("label", { class: "check" }, box, ` ${label}`) };
}

// The KEDA triggers beside the running requests per replica; `apply(scaling)` adds those set.
export function kedaTriggers() {
  const queue = h("input", { name: "queue_depth", type: "number", min: "0", step: "any", placeholder: "5" });
  const qps = h("input", { name: "requests_per_second", type: "number", min: "0", step: "any" });
  const window = h("input", { name: "rate_window_seconds", type: "number", min: "10", max: "600", placeholder: "60" });
  const gpu = h("input", { name: "gpu_utilization", type: "number", min: "1", max: "100", step: "any" });
  return {
    element: h("div", { class: "row" },
      field("Queued requests per replica", queue, { field: "autoscaling.queue_depth", hint: "Default 5" }),
      field("Requests per second per replica", qps, { field: "autoscaling.requests_per_second", hint: "Optional: a request-rate trigger" }),
      field("Rate window (seconds)", window, { field: "autoscaling.rate_window_seconds", hint: "Of the request rate; default 60" }),
      field("GPU utilization % per replica", gpu, { field: "autoscaling.gpu_utilization", hint: "Optional: needs the DCGM exporter's metrics" })),
    apply(scaling) {
      if (num(queue) !== null) scaling.queue_depth = num(queue);
      if (num(qps) !== null) scaling.requests_per_second = num(qps);
      if (num(window) !== null) scaling.rate_window_seconds = num(window);
      if (num(gpu) !== null) scaling.gpu_utilization = num(gpu);
    },
  };
}

// Other acceptable instance types, by preference (at most 4).
export function fallbackTypes() {
  const input = h("input", { name: "fallback_instance_types", autocomplete: "off", spellcheck: "false", placeholder: "ml.g6e.xlarge, ml.g5.12xlarge" });
  return {
    element: field("Fallbacks, by preference", input, {
      field: "fallback_instance_types",
      hint: "Other ml.* types the endpoint may run on when the first has no room, comma-separated, at most 4",
    }),
    apply(spec) {
      const list = text(input).split(/[\s,]+/).filter(Boolean);
      if (list.length) spec.fallback_instance_types = list;
    },
  };
}

// TLS and DNS, data capture and disaggregation of a managed endpoint.
export function managedOptions() {
  const acm = h("input", { name: "acm_certificate_arn", autocomplete: "off", spellcheck: "false", placeholder: "arn:aws:acm:us-east-1:123456789012:certificate/…" });
  const domain = h("input", { name: "domain_name", autocomplete: "off", spellcheck: "false", placeholder: "chat.example.com" });
  const zone = h("input", { name: "hosted_zone_id", autocomplete: "off", spellcheck: "false", placeholder: "Z0123456789ABC" });
  const certStore = h("input", { name: "certificate_s3_uri", autocomplete: "off", spellcheck: "false", placeholder: "s3://bucket/certs" });

  const capture = check("Capture requests and responses", "data_capture");
  const captureUri = h("input", { name: "capture_s3_uri", autocomplete: "off", spellcheck: "false", placeholder: "s3://bucket/captures" });
  const atPods = check("At the model pods", "capture_model_pod", true);
  const atLb = check("At the load balancer (access logs)", "capture_load_balancer");
  const atSm = check("At the SageMaker endpoint", "capture_sagemaker_endpoint");
  const sampling = h("input", { name: "sampling_percentage", type: "number", min: "0", max: "100", value: "100" });
  const captureBox = h("div", { hidden: true },
    field("Capture to (S3 URI)", captureUri, { field: "managed.data_capture.s3_uri", hint: "Default: the certificate store's bucket" }),
    h("div", { class: "row" }, atPods.element, atLb.element, atSm.element),
    field("Sampled share of requests (%)", sampling, { field: "managed.data_capture.sampling_percentage" }));
  capture.box.addEventListener("change", () => { captureBox.hidden = !capture.box.checked; });

  const pd = check("Disaggregate prefill and decode", "disaggregation");
  const prefill = h("input", { name: "prefill_replicas", type: "number", min: "1", max: "64", value: "1" });
  const decode = h("input", { name: "decode_replicas", type: "number", min: "1", max: "64", value: "1" });
  const threshold = h("input", { name: "routing_threshold", type: "number", min: "0", placeholder: "4096" });
  const pdBox = h("div", { class: "row", hidden: true },
    field("Prefill workers", prefill, { field: "managed.disaggregation.prefill.replicas" }),
    field("Decode workers", decode, { field: "managed.disaggregation.decode.replicas" }),
    field("Remote prefill from (prompt tokens)", threshold, { field: "managed.disaggregation.routing_threshold", hint: "Default 4096" }));
  pd.box.addEventListener("change", () => { pdBox.hidden = !pd.box.checked; });

  const element = h("fieldset", { class: "managed-options", hidden: true },
    h("legend", {}, "Managed endpoint options"),
    h("div", { class: "row" },
      field("ACM certificate ARN", acm, { field: "managed.tls.acm_certificate_arn", hint: "With its domain; a Route 53 record needs both" }),
      field("Domain name", domain, { field: "managed.tls.domain_name" }),
      field("Route 53 hosted zone id", zone, { field: "managed.tls.hosted_zone_id", hint: "Optional: a DNS record for the domain" })),
    field("Self-signed certificate store (S3 URI)", certStore, { field: "managed.tls.certificate_s3_uri", hint: "Instead of an ACM certificate" }),
    capture.element,
    captureBox,
    pd.element,
    pdBox);

  return {
    element,
    // true: the endpoint is disaggregated (its replicas are set per role, no autoscaling)
    get disaggregated() {
      return pd.box.checked;
    },
    apply(managed) {
      const tls = {};
      if (text(acm)) tls.acm_certificate_arn = text(acm);
      if (text(domain)) tls.domain_name = text(domain);
      if (text(zone)) tls.hosted_zone_id = text(zone);
      if (text(certStore)) tls.certificate_s3_uri = text(certStore);
      if (Object.keys(tls).length) managed.tls = tls;
      if (capture.box.checked) {
        managed.data_capture = {
          model_pod: atPods.box.checked,
          load_balancer: atLb.box.checked,
          sagemaker_endpoint: atSm.box.checked,
        };
        if (text(captureUri)) managed.data_capture.s3_uri = text(captureUri);
        if (num(sampling) !== null && num(sampling) !== 100) managed.data_capture.sampling_percentage = num(sampling);
      }
      if (pd.box.checked) {
        managed.disaggregation = { prefill: { replicas: num(prefill) ?? 1 }, decode: { replicas: num(decode) ?? 1 } };
        if (num(threshold) !== null) managed.disaggregation.routing_threshold = num(threshold);
      }
    },
  };
}
