// What each HyperPod instance type is, as the API answers it (`GET /api/v1/inspect/instance-types`:
// vCPUs, memory, GPUs with their model and memory, EFA, read by cluster-svc from EC2's
// DescribeInstanceTypes, and the list price per hour from the one price table, cluster-svc's
// read of the AWS Price List API). No figure is restated here.

const gib = (v) => (Number.isInteger(v) ? String(v) : v.toFixed(1));

// { name, family, kind: "GPU" | "Trainium" | "Inferentia" | "CPU", accelerator, gpus,
//   gpuMemory (GiB per accelerator), vcpu, memory (GiB), efa } from the API's answer for a type;
// a value the API does not give is null. AWS's Trainium and Inferentia chips are not GPUs: EC2
// lists them apart (NeuronInfo), so their count is not given here.
export function describe(offered) {
  const name = offered.instance_type;
  const family = name.replace(/^ml\./, "").split(".")[0];
  const neuron = /^trn\d/.test(family) ? "Trainium" : /^inf\d/.test(family) ? "Inferentia" : null;
  const gpus = offered.gpu_count || null;
  return {
    name,
    family,
    kind: gpus ? "GPU" : neuron || "CPU",
    accelerator: gpus ? offered.gpu_model || "GPU" : neuron ? `AWS ${neuron}` : null,
    gpus,
    gpuMemory: gpus ? offered.gpu_memory_gib ?? null : null,
    vcpu: offered.vcpus ?? null,
    memory: offered.memory_gib ?? null,
    efa: Boolean(offered.efa_supported),
    price: offered.price_per_hour ?? null,
  };
}

// "1 × NVIDIA A10G (22.4 GiB each) · 32 vCPU · 128 GiB · EFA · $3.06/h"
export function summary(t) {
  const parts = [];
  if (t.gpus) parts.push(`${t.gpus} × ${t.accelerator}${t.gpuMemory ? ` (${gib(t.gpuMemory)} GiB each)` : ""}`);
  else if (t.accelerator) parts.push(t.accelerator);
  if (t.vcpu !== null) parts.push(`${t.vcpu} vCPU`);
  if (t.memory !== null) parts.push(`${gib(t.memory)} GiB`);
  if (t.efa) parts.push("EFA");
  if (t.price !== null) parts.push(`$${t.price.toFixed(2)}/h`);
  return parts.join(" · ");
}
