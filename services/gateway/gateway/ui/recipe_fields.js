// The training form's typed fields per recipe (shared/contracts/workloads.py): a shell script's
// body; the model, dataset and hyperparameters of LLaMA-Factory and MS-Swift (SFT or GRPO with
// its reward functions and completions per prompt); and the placement of every recipe (nodes
// whose deep health check passed only, pods under one network node). Only the fields set (or
// changed from the form's default) are sent; the API's errors land at them.

import { field, h, nextId } from "./dom.js";

const num = (input) => (input.value.trim() === "" ? null : Number(input.value));
const text = (input) => input.value.trim();
const REWARDS = ["accuracy", "format", "cosine", "repetition", "soft_overlong"];
const LAYERS = [
  ["", "No topology preference"],
  ["network-node-layer-3", "Layer 3: the nearest network node"],
  ["network-node-layer-2", "Layer 2"],
  ["network-node-layer-1", "Layer 1: the farthest"],
];

function select(name, options, value) {
  return h("select", { name }, ...options.map(([v, label]) => h("option", { value: v, selected: v === value }, label)));
}

function numberInput(name, attrs) {
  return h("input", { name, type: "number", inputmode: "decimal", ...attrs });
}

export function recipeFields() {
  // shell
  const body = h("textarea", { name: "body", rows: "5", spellcheck: "false", placeholder: 'echo "rank $NODE_RANK of $NNODES"\npython3 /s3/code/train.py' });
  const shell = h("div", { class: "recipe-shell", hidden: true },
    field("Bash script", body, { field: "body", hint: "Runs on every worker with torchrun's rendezvous variables (NODE_RANK, NNODES, MASTER_ADDR…)" }));

  // llama-factory and ms-swift
  const model = h("input", { name: "model", autocomplete: "off", spellcheck: "false", placeholder: "models/Qwen2.5-0.5B" });
  const dataset = h("input", { name: "dataset", autocomplete: "off", spellcheck: "false", placeholder: "datasets/alpaca" });
  const output = h("input", { name: "output", autocomplete: "off", spellcheck: "false", placeholder: "outputs/my-run" });
  const epochs = numberInput("epochs", { min: "0", step: "any" });
  const rate = numberInput("learning_rate", { min: "0", step: "any", placeholder: "0.0001" });
  const batch = numberInput("batch_size", { min: "1", value: "1" });
  const accumulation = numberInput("gradient_accumulation_steps", { min: "1", value: "8" });
  const length = numberInput("max_length", { min: "16", value: "2048" });
  const rank = numberInput("lora_rank", { min: "1", value: "8" });
  const steps = numberInput("max_steps", { min: "1" });
  const finetuning = select("finetuning_type", [["lora", "LoRA"], ["full", "Full"], ["freeze", "Freeze"]], "lora");
  const template = h("input", { name: "template", value: "qwen", autocomplete: "off", spellcheck: "false" });
  const algorithm = select("algorithm", [["sft", "SFT (swift sft)"], ["grpo", "GRPO (swift rlhf --rlhf_type grpo)"]], "sft");
  const trainType = select("train_type", [["lora", "LoRA"], ["full", "Full"]], "lora");
  const generations = numberInput("num_generations", { min: "2", max: "64", value: "8" });
  const rewards = REWARDS.map((r) => {
    const box = h("input", { type: "checkbox", name: "reward_funcs", value: r, checked: r === "accuracy" || r === "format" });
    return { r, box, element: h("label", { class: "check" }, box, ` ${r}`) };
  });
  // the first reward box carries the field, so the API's reward_funcs errors land by the group
  const first = rewards[0].box;
  first.id = nextId("reward");
  first.dataset.field = "reward_funcs";
  first.setAttribute("aria-describedby", `${first.id}-error`);
  const grpo = h("div", { class: "recipe-grpo", hidden: true },
    h("fieldset", {}, h("legend", {}, "Reward functions"),
      h("div", { class: "row" }, ...rewards.map((x) => x.element)),
      h("p", { class: "field-error", id: `${first.id}-error`, hidden: true })),
    field("Completions per prompt", generations, { field: "num_generations" }));

  const swift = h("div", { class: "recipe-swift", hidden: true },
    h("div", { class: "row" },
      field("Method", algorithm, { field: "algorithm" }),
      field("Train type", trainType, { field: "train_type" })),
    grpo);
  const factory = h("div", { class: "recipe-factory", hidden: true },
    h("div", { class: "row" },
      field("Fine-tuning type", finetuning, { field: "finetuning_type" }),
      field("Chat template", template, { field: "template" })));
  const tuning = h("div", { class: "recipe-tuning", hidden: true },
    h("div", { class: "row" },
      field("Model (path in the bucket)", model, { field: "model" }),
      field("Dataset (path in the bucket)", dataset, { field: "dataset" }),
      field("Output (path in the bucket)", output, { field: "output", hint: "Optional" })),
    swift,
    factory,
    h("fieldset", {}, h("legend", {}, "Hyperparameters"),
      h("div", { class: "row" },
        field("Epochs", epochs, { field: "epochs", hint: "Default: 3 (LLaMA-Factory), 1 (MS-Swift)" }),
        field("Learning rate", rate, { field: "learning_rate", hint: "Default 0.0001" }),
        field("Batch size per device", batch, { field: "hyperparameters.batch_size" }),
        field("Gradient accumulation steps", accumulation, { field: "hyperparameters.gradient_accumulation_steps" })),
      h("div", { class: "row" },
        field("Max tokens per sample", length, { field: "hyperparameters.max_length" }),
        field("LoRA rank", rank, { field: "hyperparameters.lora_rank" }),
        field("Stop after steps", steps, { field: "hyperparameters.max_steps", hint: "Optional; default: the epochs" }))));
  algorithm.addEventListener("change", () => { grpo.hidden = algorithm.value !== "grpo"; });

  // placement, every recipe
  const healthy = h("input", { type: "checkbox", name: "deep_health_check_passed" });
  const healthyField = field("Only nodes whose deep health check passed", healthy, { field: "placement.deep_health_check_passed", hint: "HyperPod's label sagemaker.amazonaws.com/deep-health-check-status=Passed" });
  healthyField.classList.add("toggle");
  const layer = select("topology", LAYERS, "");
  const required = h("input", { type: "checkbox", name: "topology_required" });
  const requiredField = field("Required (else preferred)", required, { field: "placement.topology_required" });
  requiredField.classList.add("toggle");
  const placement = h("fieldset", { class: "placement" }, h("legend", {}, "Placement"),
    healthyField,
    h("div", { class: "row" },
      field("Pods under one network node", layer, { field: "placement.topology", hint: "EC2 instance topology (topology.k8s.aws/network-node-layer-N)" }),
      requiredField));

  function show(recipe) {
    shell.hidden = recipe !== "shell";
    tuning.hidden = recipe !== "llama-factory" && recipe !== "ms-swift";
    swift.hidden = recipe !== "ms-swift";
    factory.hidden = recipe !== "llama-factory";
    grpo.hidden = recipe !== "ms-swift" || algorithm.value !== "grpo";
  }

  return {
    element: h("div", { class: "recipe-fields" }, shell, tuning),
    placement,
    show,
    apply(spec) {
      const recipe = spec.recipe;
      if (recipe === "shell") spec.body = body.value;
      if (recipe === "llama-factory" || recipe === "ms-swift") {
        if (text(model)) spec.model = text(model);
        if (text(dataset)) spec.dataset = text(dataset);
        if (text(output)) spec.output = text(output);
        if (num(epochs) !== null) spec.epochs = num(epochs);
        if (num(rate) !== null) spec.learning_rate = num(rate);
        const hp = {};
        const defaults = { batch_size: 1, gradient_accumulation_steps: 8, max_length: 2048, lora_rank: 8 };
        for (const [key, input] of [["batch_size", batch], ["gradient_accumulation_steps", accumulation], ["max_length", length], ["lora_rank", rank], ["max_steps", steps]]) {
          const v = num(input);
          if (v !== null && v !== defaults[key]) hp[key] = v;
        }
        if (Object.keys(hp).length) spec.hyperparameters = hp;
      }
      if (recipe === "llama-factory") {
        if (finetuning.value !== "lora") spec.finetuning_type = finetuning.value;
        if (text(template) && text(template) !== "qwen") spec.template = text(template);
      }
      if (recipe === "ms-swift") {
        if (algorithm.value !== "sft") spec.algorithm = algorithm.value;
        if (trainType.value !== "lora") spec.train_type = trainType.value;
        if (algorithm.value === "grpo") {
          spec.reward_funcs = rewards.filter((x) => x.box.checked).map((x) => x.r);
          if (num(generations) !== null && num(generations) !== 8) spec.num_generations = num(generations);
        }
      }
      const place = {};
      if (healthy.checked) place.deep_health_check_passed = true;
      if (layer.value) place.topology = layer.value;
      if (required.checked) place.topology_required = true;
      if (Object.keys(place).length) spec.placement = place;
    },
  };
}
