// Development spaces of a cluster (JupyterLab, Code Editor), yours alone: create one with
// GPUs, memory and the cluster's storage claims mounted; open it here through the gateway
// (your token, no open port); start, stop, delete; the port-forward command for a local IDE.
// A space template (the cluster's WorkspaceTemplates) fills the form with its defaults and
// names its bounds; the operator enforces them.

import { del, get, post, request } from "../api.js";
import {
  announce, badge, clearErrors, confirmAction, field, fill, formError, h, operationLink, section,
  showErrors, when,
} from "../dom.js";
import { watch } from "../store.js";

function numberOrNull(input) {
  const text = input.value.trim();
  return text === "" ? null : Number(text);
}

export async function render(main, [cluster]) {
  const base = `/clusters/${encodeURIComponent(cluster)}/spaces`;
  const status = h("div", { class: "notice", role: "status" });
  main.append(
    h("p", { class: "crumbs" }, h("a", { href: "#/clusters" }, "Clusters"), " / ",
      h("a", { href: `#/clusters/${encodeURIComponent(cluster)}` }, cluster), " / Spaces"),
    h("h1", {}, "Spaces"),
    h("p", {}, "JupyterLab or Code Editor on the cluster, through the SageMaker Spaces add-on"
      + " (turn it on under Features). A space is yours alone: nobody else opens or changes it."),
    status,
  );

  const name = h("input", { name: "name", autocomplete: "off", spellcheck: "false", placeholder: "my-lab" });
  const app = h("select", { name: "app_type" },
    h("option", { value: "jupyterlab" }, "JupyterLab"), h("option", { value: "code-editor" }, "Code Editor"));
  const gpu = h("input", { name: "gpu", type: "number", min: "0", max: "8", value: "0", inputmode: "numeric" });
  const cpu = h("input", { name: "cpu", value: "2", autocomplete: "off" });
  const memory = h("input", { name: "memory", value: "8Gi", autocomplete: "off" });
  const claim = h("input", { name: "volumes", value: "s3-claim", autocomplete: "off", spellcheck: "false" });
  const mount = h("input", { name: "mount_path", value: "/data", autocomplete: "off", spellcheck: "false" });
  const idle = h("input", { name: "idle_shutdown", type: "number", min: "5", max: "1440", value: "60", inputmode: "numeric" });
  const template = h("select", { name: "template" }, h("option", { value: "" }, "None"));
  const bounds = h("p", { class: "hint", "aria-live": "polite" });
  const templates = await get(`/clusters/${encodeURIComponent(cluster)}/space-templates`).catch(() => []);
  for (const t of templates) template.append(h("option", { value: t.name }, t.display_name ? `${t.display_name} (${t.name})` : t.name));
  template.addEventListener("change", () => {
    const chosen = templates.find((t) => t.name === template.value);
    if (!chosen) { bounds.textContent = ""; return; }
    const d = chosen.defaults || {};
    if (chosen.app_type) app.value = chosen.app_type;
    gpu.value = String(d.gpu ?? 0);
    cpu.value = d.cpu || "";
    memory.value = d.memory || "";
    idle.value = d.idle_timeout_minutes ? String(d.idle_timeout_minutes) : "";
    const b = chosen.bounds || {};
    const range = (label, r) => (r ? `${label} ${r.min ?? "?"} to ${r.max ?? "?"}` : null);
    const parts = [range("GPUs", b.gpu), range("CPU", b.cpu), range("memory", b.memory), range("idle minutes", b.idle_timeout_minutes)].filter(Boolean);
    bounds.textContent = `${chosen.description || chosen.display_name || chosen.name}. Image ${chosen.default_image}.`
      + (parts.length ? ` Allowed: ${parts.join(", ")}.` : "");
  });
  const form = h("form", { novalidate: true, "aria-label": "Create a space" },
    h("div", { class: "row" },
      field("Space name", name, { field: "name" }),
      field("Template", template, { field: "template" }),
      field("App", app, { field: "app_type" })),
    bounds,
    h("div", { class: "row" },
      field("GPUs", gpu, { field: "gpu" }),
      field("CPU", cpu, { field: "cpu", hint: "e.g. 2 or 500m" }),
      field("Memory", memory, { field: "memory", hint: "e.g. 8Gi" })),
    h("div", { class: "row" },
      field("Storage claim to mount (optional)", claim, { field: "volumes", hint: "the cluster's bucket is s3-claim" }),
      field("Mounted at", mount, { field: "volumes.0.mount_path" })),
    field("Stop after idle minutes (empty: never)", idle, { field: "idle_shutdown" }),
    formError(),
    h("button", { type: "submit" }, "Create space"));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearErrors(form);
    const spec = { name: name.value.trim(), app_type: app.value, gpu: numberOrNull(gpu) ?? 0 };
    if (template.value) spec.template = template.value;
    if (cpu.value.trim()) spec.cpu = cpu.value.trim();
    if (memory.value.trim()) spec.memory = memory.value.trim();
    if (claim.value.trim()) {
      const volume = { claim: claim.value.trim() };
      if (mount.value.trim()) volume.mount_path = mount.value.trim();
      spec.volumes = [volume];
    }
    const minutes = numberOrNull(idle);
    if (minutes !== null) spec.idle_shutdown = { enabled: true, timeout_minutes: minutes };
    try {
      const accepted = await post(base, spec);
      fill(status, `Creating space ${spec.name}: `, operationLink(accepted.operation_id, "follow the operation"));
      announce(`Creating space ${spec.name}`);
    } catch (error) {
      showErrors(form, error);
    }
  });

  // The space's page, fetched with this tab's token and shown in a sandboxed frame: the
  // gateway answers it for the owner only.
  const frame = h("iframe", { title: "Space", sandbox: "", class: "space-frame", hidden: true });
  const frameNote = h("p", { role: "status" });
  async function open(space) {
    try {
      const answer = await request("GET", `${base}/${encodeURIComponent(space.name)}/lab/`, undefined, { text: true });
      frame.srcdoc = answer.text;
      frame.hidden = false;
      frame.title = `Space ${space.name}`;
      fill(frameNote, `Showing ${space.name} through the gateway.`);
    } catch (error) {
      frame.hidden = true;
      fill(frameNote, error.message);
    }
  }

  async function act(space, verb) {
    try {
      const accepted = verb === "delete"
        ? await del(`${base}/${encodeURIComponent(space.name)}`)
        : await post(`${base}/${encodeURIComponent(space.name)}/${verb}`);
      fill(status, `${verb} ${space.name}: `, operationLink(accepted.operation_id, "follow the operation"));
      announce(`${verb} ${space.name}`);
    } catch (error) {
      fill(status, error.message);
    }
  }

  const body = h("tbody");
  main.append(
    section("Create a space", form),
    section("Your spaces", h("div", { class: "table-wrap" }, h("table", { class: "list" },
      h("caption", { class: "visually-hidden" }, "Spaces"),
      h("thead", {}, h("tr", {}, ...["Space", "Status", "Resources", "Volumes", "Local IDE", "Created", "Actions"]
        .map((c) => h("th", { scope: "col" }, c)))),
      body))),
    section("Open space", frameNote, frame),
  );
  const stop = watch(`${base}?limit=1000`, (spaces) => {
    fill(body, ...spaces.map((s) => {
      const running = s.status === "Running";
      const buttons = [
        h("button", { type: "button", class: "secondary", disabled: !running, onclick: () => open(s) }, "Open"),
        running || s.status === "Starting"
          ? h("button", { type: "button", class: "secondary", onclick: () => act(s, "stop") }, "Stop")
          : h("button", { type: "button", class: "secondary", onclick: () => act(s, "start") }, "Start"),
        h("button", {
          type: "button", class: "danger",
          onclick: async () => {
            if (await confirmAction(`Delete space ${s.name}? Its claims stay.`, "Delete")) act(s, "delete");
          },
        }, "Delete"),
      ];
      return h("tr", { "data-space": s.name },
        h("th", { scope: "row", "data-label": "Space" }, s.name),
        h("td", { "data-label": "Status" }, badge(s.status)),
        h("td", { "data-label": "Resources" }, `${s.gpu} GPU, ${s.cpu ?? "-"} CPU, ${s.memory ?? "-"}`),
        h("td", { "data-label": "Volumes" }, (s.volumes || []).map((v) => `${v.claim} at ${v.mount_path}`).join(", ") || "none"),
        h("td", { "data-label": "Local IDE" }, h("code", {}, s.port_forward)),
        h("td", { "data-label": "Created" }, when(s.created_at)),
        h("td", { "data-label": "Actions" }, h("span", { class: "actions" }, ...buttons)));
    }));
    if (!spaces.length) fill(body, h("tr", {}, h("td", { colspan: "7" }, "No spaces yet.")));
  }, { cluster, failed: (error) => { status.textContent = error.message; } });
  return stop;
}
