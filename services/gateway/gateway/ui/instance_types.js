// What each HyperPod instance type is: accelerators, their memory, vCPU, memory, and a list price.
// The API's instance-type list names the types and their zones only, so the rest comes from this
// table (AWS's published specifications of the EC2 types behind the ml.* names).
//
// LIST_PRICES: approximate EC2 On-Demand prices per hour, Linux, us-east-1, in USD, compiled
// 2026-12-01 without a live read of https://aws.amazon.com/ec2/pricing/on-demand/ (to be checked
// against it). GET /api/v1/capacity answers SageMaker's rates per cluster. A HyperPod bill differs
// (SageMaker prices, plans, discounts): this is the order of magnitude a fleet costs, no more.
export const LIST_PRICES_SOURCE = "approximate EC2 On-Demand list prices, us-east-1, 2026-12-01 (to be checked against aws.amazon.com/ec2/pricing/on-demand)";

const SIZES = { medium: 1, large: 2, xlarge: 4 };

// family -> [accelerator, memory per accelerator GiB, memory per vCPU GiB]; per size:
// [accelerators, vCPU, memory GiB, list price $/h | null]
const ACCELERATED = {
  g4dn: ["NVIDIA T4", 16, {
    xlarge: [1, 4, 16, 0.526], "2xlarge": [1, 8, 32, 0.752], "4xlarge": [1, 16, 64, 1.204],
    "8xlarge": [1, 32, 128, 2.176], "12xlarge": [4, 48, 192, 3.912], "16xlarge": [1, 64, 256, 4.352],
  }],
  g5: ["NVIDIA A10G", 24, {
    xlarge: [1, 4, 16, 1.006], "2xlarge": [1, 8, 32, 1.212], "4xlarge": [1, 16, 64, 1.624],
    "8xlarge": [1, 32, 128, 2.448], "12xlarge": [4, 48, 192, 5.672], "16xlarge": [1, 64, 256, 4.096],
    "24xlarge": [4, 96, 384, 8.144], "48xlarge": [8, 192, 768, 16.288],
  }],
  g6: ["NVIDIA L4", 24, {
    xlarge: [1, 4, 16, 0.8048], "2xlarge": [1, 8, 32, 0.9776], "4xlarge": [1, 16, 64, 1.3232],
    "8xlarge": [1, 32, 128, 2.0144], "12xlarge": [4, 48, 192, 4.6016], "16xlarge": [1, 64, 256, 3.3968],
    "24xlarge": [4, 96, 384, 6.6752], "48xlarge": [8, 192, 768, 13.3504],
  }],
  g6e: ["NVIDIA L40S", 48, {
    xlarge: [1, 4, 32, 1.861], "2xlarge": [1, 8, 64, 2.242], "4xlarge": [1, 16, 128, 3.004],
    "8xlarge": [1, 32, 256, 4.529], "12xlarge": [4, 48, 384, 10.493], "16xlarge": [1, 64, 512, 7.577],
    "24xlarge": [4, 96, 768, 15.066], "48xlarge": [8, 192, 1536, 30.131],
  }],
  gr6: ["NVIDIA L4", 24, { "4xlarge": [1, 16, 128, null], "8xlarge": [1, 32, 256, null] }],
  p4d: ["NVIDIA A100", 40, { "24xlarge": [8, 96, 1152, null] }],
  p4de: ["NVIDIA A100", 80, { "24xlarge": [8, 96, 1152, null] }],
  p5: ["NVIDIA H100", 80, { "4xlarge": [1, 16, 256, null], "48xlarge": [8, 192, 2048, null] }],
  p5en: ["NVIDIA H200", 141, { "48xlarge": [8, 192, 2048, null] }],
  "p6-b200": ["NVIDIA B200", 179, { "48xlarge": [8, 192, 2048, null] }],
  trn1: ["AWS Trainium", 32, { "32xlarge": [16, 128, 512, 21.50] }],
  trn1n: ["AWS Trainium", 32, { "32xlarge": [16, 128, 512, 24.78] }],
};

// general-purpose families: memory per vCPU (GiB)
const MEMORY_PER_VCPU = { c: 2, m: 4, r: 8, t: 4, i: 8 };

// { name, family, kind: "GPU" | "Trainium" | "CPU", accelerator, gpus, gpuMemory (GiB, all
// accelerators together), vcpu, memory (GiB), price ($/h) }; a value not known is null.
export function describe(instanceType) {
  const bare = instanceType.replace(/^ml\./, "");
  const [family, size] = bare.split(".");
  const accelerated = ACCELERATED[family];
  if (accelerated) {
    const [accelerator, perChip, sizes] = accelerated;
    const [gpus, vcpu, memory, price] = sizes[size] || [null, null, null, null];
    return {
      name: instanceType, family, accelerator, gpus, vcpu, memory, price,
      kind: accelerator.startsWith("AWS") ? "Trainium" : "GPU",
      gpuMemory: gpus === null ? null : gpus * perChip,
    };
  }
  // g7, g7e, p6-b300 and later: accelerated, their figures not in this table yet
  const gpuFamily = /^(g|p)\d/.test(family);
  const n = SIZES[size] ?? (size.endsWith("xlarge") ? 4 * Number(size.slice(0, -6)) : null);
  const vcpu = gpuFamily ? null : family === "t3" && size === "medium" ? 2 : n;
  // t3.medium is the one small type with 2 GiB per vCPU; c5n and the like have their own ratio
  const perVcpu = family === "t3" && size === "medium" ? 2 : /n$/.test(family) ? null : MEMORY_PER_VCPU[family[0]] ?? null;
  return {
    name: instanceType, family, kind: gpuFamily ? "GPU" : "CPU", accelerator: null,
    gpus: null, gpuMemory: null, vcpu, memory: vcpu !== null && perVcpu !== null ? vcpu * perVcpu : null, price: null,
  };
}

// "1 × NVIDIA A10G (24 GiB) · 32 vCPU · 128 GiB · $2.45/h"
export function summary(instanceType) {
  const t = describe(instanceType);
  const parts = [];
  if (t.gpus !== null) parts.push(`${t.gpus} × ${t.accelerator} (${t.gpuMemory} GiB)`);
  else if (t.kind !== "CPU") parts.push("accelerated, figures not listed");
  if (t.vcpu !== null) parts.push(`${t.vcpu} vCPU`);
  if (t.memory !== null) parts.push(`${t.memory} GiB`);
  if (t.price !== null) parts.push(`$${t.price.toFixed(2)}/h`);
  return parts.join(" · ");
}
