// "GPU sharing" of a job or an endpoint (shared/contracts/gpu.py): whole GPUs (the default), a
// MIG partition (nvidia.com/mig-<profile>; the "GPUs" count then counts partitions) or a HAMi
// share (virtual GPUs with nvidia.com/gpumem MiB of device memory and nvidia.com/gpucores % of
// one GPU's cores). Sent as the contract's fields mig_profile, gpu_memory_mib and gpu_cores
// (under `resources.` for a job, at the top for an endpoint), so the API's errors land at them.

import { field, h } from "./dom.js";

// Instance type -> the MIG profiles its GPUs can be partitioned into, smallest first: the
// contract's table (MIG_PROFILES in shared/contracts/gpu.py; tests/ui/test_gpu_share_table.py
// checks the two agree). No API read lists them per instance type.
const A100_40 = ["mig-1g.5gb", "mig-1g.10gb", "mig-2g.10gb", "mig-3g.20gb", "mig-4g.20gb", "mig-7g.40gb"];
const GB80 = ["mig-1g.10gb", "mig-1g.20gb", "mig-2g.20gb", "mig-3g.40gb", "mig-4g.40gb", "mig-7g.80gb"];
const H200 = ["mig-1g.18gb", "mig-1g.35gb", "mig-2g.35gb", "mig-3g.71gb", "mig-4g.71gb", "mig-7g.141gb"];
export const MIG_PROFILES = {
  "ml.p4d.24xlarge": A100_40,
  "ml.p4de.24xlarge": GB80,
  "ml.p5.48xlarge": GB80,
  "ml.p5e.48xlarge": H200,
  "ml.p5en.48xlarge": H200,
};

const CHOICES = [
  ["whole", "Whole GPUs"],
  ["mig", "MIG partition"],
  ["hami", "HAMi share (GPU memory and cores)"],
];

// prefix: "resources." (jobs) or "" (endpoints); target() -> { instance_type, mig_profile }:
// the chosen group's type and the profile it is partitioned into (null when none; left out
// when the form picks a type rather than a group).
export function gpuShareFields({ prefix, target }) {
  const kind = h("select", { name: "gpu_sharing" }, ...CHOICES.map(([v, label]) => h("option", { value: v }, label)));
  const profile = h("select", { name: "mig_profile" });
  const profileHint = h("p", { class: "hint", "aria-live": "polite" });
  const memory = h("input", { name: "gpu_memory_mib", type: "number", min: "1", max: "200000", inputmode: "numeric", placeholder: "20000" });
  const cores = h("input", { name: "gpu_cores", type: "number", min: "1", max: "100", inputmode: "numeric", placeholder: "40" });
  const mig = h("div", { class: "gpu-mig", hidden: true },
    field("MIG profile", profile, { field: `${prefix}mig_profile` }), profileHint);
  const hami = h("div", { class: "gpu-hami row", hidden: true },
    field("GPU memory per virtual GPU (MiB)", memory, { field: `${prefix}gpu_memory_mib`, hint: "nvidia.com/gpumem; optional" }),
    field("GPU cores per virtual GPU (%)", cores, { field: `${prefix}gpu_cores`, hint: "nvidia.com/gpucores, percent of one GPU; optional" }));

  // the profiles of the target's instance type; the one its nodes are partitioned into first
  function update() {
    const { instance_type: type, mig_profile: partitioned } = target() || {};
    const profiles = MIG_PROFILES[type] || [];
    const before = profile.value;
    profile.replaceChildren(...profiles.map((p) => h("option", { value: p }, p)));
    profile.disabled = !profiles.length;
    if (profiles.includes(before)) profile.value = before;
    if (partitioned && profiles.includes(partitioned) && !profiles.includes(before)) profile.value = partitioned;
    if (!type) profileHint.textContent = "";
    else if (!profiles.length) {
      profileHint.textContent = `${type} has no MIG partitions: HyperPod partitions the GPUs of ${Object.keys(MIG_PROFILES).join(", ")}.`;
    } else {
      // partitioned: the group's profile, null for a group not partitioned, undefined for a
      // type chosen without a group (an endpoint: placed on a group partitioned into it)
      const where = partitioned
        ? `Its nodes are partitioned into ${partitioned}.`
        : partitioned === null
          ? "Its nodes are not partitioned: set the instance group's MIG profile first."
          : "Served on nodes of an instance group partitioned into the profile.";
      profileHint.textContent = `${where} "GPUs" counts partitions.`;
    }
  }

  function show() {
    mig.hidden = kind.value !== "mig";
    hami.hidden = kind.value !== "hami";
  }
  kind.addEventListener("change", () => {
    show();
    update();
  });

  const element = h("fieldset", { class: "gpu-sharing" }, h("legend", {}, "GPU sharing"),
    field("GPUs as", kind, { hint: "Whole GPUs, a MIG partition of a partitioned group, or a HAMi share (needs HAMi on the cluster)." }),
    mig, hami);
  return {
    element,
    update,
    // the contract's fields on `spec` (a job's resources, or an endpoint); an error the form
    // can tell before sending: { field, message } (null when there is none)
    apply(spec) {
      if (kind.value === "mig") {
        if (!profile.value) {
          const { instance_type: type } = target() || {};
          return { field: `${prefix}mig_profile`, message: `${type || "This instance type"} has no MIG partitions: choose whole GPUs or a HAMi share, or a group of ${Object.keys(MIG_PROFILES).join(", ")}.` };
        }
        spec.mig_profile = profile.value;
      }
      if (kind.value === "hami") {
        if (memory.value.trim() === "" && cores.value.trim() === "") {
          return { field: `${prefix}gpu_memory_mib`, message: "A HAMi share needs GPU memory (MiB), GPU cores (%) or both: set one, or choose whole GPUs." };
        }
        if (memory.value.trim() !== "") spec.gpu_memory_mib = Number(memory.value);
        if (cores.value.trim() !== "") spec.gpu_cores = Number(cores.value);
      }
      return null;
    },
  };
}
