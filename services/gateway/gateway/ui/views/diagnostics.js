// Diagnostics of a cluster: its pods (kubectl's STATUS, restarts, last termination), its
// Kubernetes events (newest last) and one pod's log, or its previous container's. Viewer-role
// reads only: nothing here changes the cluster.

import { get, query } from "../api.js";
import { clearErrors, elapsed, field, fill, formError, h, newestOnly, nextId, section, showErrors } from "../dom.js";
import { podTerminal } from "./terminal.js";

const enc = encodeURIComponent;
const FINE = new Set(["Running", "Completed", "Succeeded"]);
const UNDERWAY = new Set(["Pending", "ContainerCreating", "PodInitializing", "Terminating"]);

// CrashLoopBackOff, ImagePullBackOff, OOMKilled, Error, Init:Error, Unknown... deserve a look.
function troubled(status) {
  return !FINE.has(status) && !UNDERWAY.has(status) && !/^Init:\d+\/\d+$/.test(status);
}

// A word and an icon, never a color alone.
function statusBadge(status, warn) {
  const [cls, icon] = warn ? ["status-warn", "⚠"] : FINE.has(status) ? ["status-succeeded", "✓"] : ["status-pending", "○"];
  return h("span", { class: `badge ${cls}` }, h("span", { "aria-hidden": "true" }, icon), " ", status);
}

function ago(iso) {
  return iso ? h("time", { datetime: iso, title: iso }, `${elapsed(iso)} ago`) : "—";
}

function table(caption, columns, rows) {
  return h("div", { class: "table-wrap" }, h("table", { class: "list" },
    h("caption", { class: "visually-hidden" }, caption),
    h("thead", {}, h("tr", {}, ...columns.map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, ...rows)));
}

function toggle(label, input, options) {
  const el = field(label, input, options);
  el.classList.add("toggle");
  return el;
}

function lastTermination(pod) {
  const ended = (pod.containers || []).filter((c) => c.last_termination);
  if (!ended.length) return "—";
  return ended.map((c) => h("div", {},
    ended.length > 1 || pod.containers.length > 1 ? `${c.name}: ` : "",
    `${c.last_termination.reason} (exit ${c.last_termination.exit_code ?? "?"}) `,
    c.last_termination.finished_at ? ago(c.last_termination.finished_at) : ""));
}

export async function render(main, [name]) {
  const base = `/clusters/${enc(name)}`;
  main.append(
    h("p", { class: "crumbs" }, h("a", { href: "#/clusters" }, "Clusters"), " / ",
      h("a", { href: `#/clusters/${enc(name)}` }, name), " / Diagnostics"),
    h("h1", {}, `Diagnostics of ${name}`),
    h("p", { class: "hint" }, "Pods, Kubernetes events and container logs, as kubectl shows them; an operator opens a pod's terminal."),
  );

  // Namespaces seen in the answers, offered by both namespace inputs.
  const namespaces = new Set(["default", "*"]);
  const nsList = h("datalist", { id: nextId("namespaces") });
  const remember = (names) => {
    for (const n of names) if (n) namespaces.add(n);
    fill(nsList, ...[...namespaces].sort().map((n) => h("option", { value: n })));
  };
  remember([]);

  // ---- pods ------------------------------------------------------------------------------
  const podsNs = h("input", { name: "namespace", value: "default", list: nsList.id, autocomplete: "off", spellcheck: "false" });
  const selector = h("input", { name: "selector", autocomplete: "off", spellcheck: "false", placeholder: "app=web" });
  const podsForm = h("form", { novalidate: true, "aria-label": "Which pods" },
    h("div", { class: "row" },
      field("Namespace", podsNs, { field: "query.namespace", hint: "* for every namespace" }),
      field("Label selector", selector, { field: "query.selector", hint: "Optional, e.g. hyperpilot.dev/job=my-job" })),
    formError(),
    h("button", { type: "submit" }, "Show pods"));
  const podsBox = h("div", { "aria-live": "polite" }, h("p", {}, "Reading pods…"));

  const podsTurn = newestOnly(); // the first read (namespace default) may come back last
  async function loadPods() {
    const mine = podsTurn();
    clearErrors(podsForm);
    try {
      const answer = await get(`${base}/pods${query({ namespace: podsNs.value.trim() || "default", selector: selector.value.trim() })}`);
      if (!mine()) return;
      const pods = answer.pods || [];
      remember(pods.map((p) => p.namespace));
      const everywhere = answer.namespace === "*";
      fill(podsBox, pods.length
        ? table("Pods", ["Pod", "Status", "Ready", "Restarts", "Node", "Age", "Last termination", "Log"],
          pods.map((p) => {
            const warn = troubled(p.status);
            return h("tr", { "data-pod": p.name, "data-namespace": p.namespace, class: warn ? "warn" : null },
              h("th", { scope: "row", "data-label": "Pod" }, p.name,
                everywhere ? h("span", { class: "hint" }, h("br"), p.namespace) : null),
              h("td", { "data-label": "Status", class: "pod-status" }, statusBadge(p.status, warn),
                p.message ? h("span", { class: "hint" }, ` ${p.message}`) : null),
              h("td", { "data-label": "Ready" }, p.ready),
              h("td", { "data-label": "Restarts", class: p.restarts ? "restarts warn-text" : "restarts" }, String(p.restarts)),
              h("td", { "data-label": "Node" }, p.node || "—"),
              h("td", { "data-label": "Age" }, ago(p.created_at)),
              h("td", { "data-label": "Last termination", class: "last-termination" }, lastTermination(p)),
              h("td", { "data-label": "Log" }, h("button", {
                type: "button",
                class: "small secondary",
                "aria-label": `Log of ${p.name}`,
                "aria-controls": logSection.id,
                onclick: () => openLog(p),
              }, "Log"),
              " ",
              h("button", {
                type: "button",
                class: "small secondary",
                "aria-label": `Terminal of ${p.name}`,
                onclick: () => openTerminal(p),
              }, "Terminal")));
          }))
        : h("p", {}, `No pods in ${everywhere ? "any namespace" : `namespace ${answer.namespace}`}${answer.selector ? ` matching ${answer.selector}` : ""}.`));
    } catch (error) {
      if (!mine()) return;
      fill(podsBox);
      showErrors(podsForm, error);
    }
  }
  podsForm.addEventListener("submit", (event) => {
    event.preventDefault();
    loadPods();
  });

  // ---- one pod's log ---------------------------------------------------------------------
  let pod = null;
  let chosen = null; // the container asked for; null: the pod's default one
  const logTurn = newestOnly();
  const logHeading = h("h2", { id: nextId("log"), tabindex: "-1" }, "Log");
  const container = h("select", { name: "container" });
  const tail = h("input", { name: "tail", type: "number", min: "1", max: "5000", value: "500", class: "count" });
  const previous = h("input", { type: "checkbox", name: "previous" });
  const previousField = toggle("Previous container", previous, { field: "query.previous", hint: "Its instance before the last restart, where a crash's error usually is" });
  const out = h("pre", { class: "logs", tabindex: "0", "aria-label": "Pod log lines" });
  const meta = h("p", { class: "hint log-meta", "aria-live": "polite" });
  const logForm = h("form", { novalidate: true, "aria-label": "Log options" },
    h("div", { class: "row" },
      field("Container", container, { field: "query.container" }),
      field("Last lines", tail, { field: "query.tail", hint: "At most 5,000" })),
    previousField,
    formError(),
    h("div", { class: "actions" },
      h("button", { type: "submit" }, "Refresh log"),
      h("button", { type: "button", class: "secondary", onclick: () => eventsOf(pod) }, "Events of this pod")));
  const logSection = h("section", { class: "card", id: nextId("logs"), "aria-labelledby": logHeading.id, hidden: true },
    logHeading, logForm, meta, out);

  async function loadLog() {
    const mine = logTurn();
    clearErrors(logForm);
    meta.textContent = "Reading…";
    const path = `${base}/pods/${enc(pod.namespace)}/${enc(pod.name)}/logs${query({ container: chosen, tail: tail.value, previous: previous.checked ? "true" : "" })}`;
    try {
      const { text, headers } = await get(path, { text: true });
      if (!mine()) return;
      const restarts = Number(headers.get("X-Restart-Count") || 0);
      container.value = headers.get("X-Container") || container.value;
      previousField.hidden = restarts === 0 && !previous.checked;
      const lines = text ? text.split("\n").length - 1 : 0;
      out.textContent = text || "(no lines)";
      out.scrollTop = out.scrollHeight;
      out.dataset.previous = String(previous.checked);
      meta.textContent = `${headers.get("X-Container")}, ${previous.checked ? "the previous container (before its last restart)" : "the current container"}: `
        + `${lines} line${lines === 1 ? "" : "s"}${headers.get("X-Truncated") === "true" ? " (the last ones only)" : ""}; `
        + `${restarts} restart${restarts === 1 ? "" : "s"}.`;
    } catch (error) {
      if (!mine()) return;
      out.textContent = "";
      meta.textContent = "";
      showErrors(logForm, error);
    }
  }

  function openLog(p) {
    pod = p;
    chosen = null;
    previous.checked = false;
    previousField.hidden = !p.restarts;
    fill(container, ...(p.containers || []).map((c) => h("option", { value: c.name }, c.init ? `${c.name} (init)` : c.name)));
    logHeading.textContent = `Log of ${p.namespace}/${p.name}`;
    logSection.hidden = false;
    logHeading.focus();
    loadLog();
  }
  container.addEventListener("change", () => {
    chosen = container.value;
    previous.checked = false;
    loadLog();
  });
  previous.addEventListener("change", loadLog);
  logForm.addEventListener("submit", (event) => {
    event.preventDefault();
    loadLog();
  });

  // ---- Kubernetes events -----------------------------------------------------------------
  const warningOnly = h("input", { type: "checkbox", name: "type" });
  const eventsNs = h("input", { name: "namespace", list: nsList.id, autocomplete: "off", spellcheck: "false", placeholder: "*" });
  const object = h("input", { name: "object", autocomplete: "off", spellcheck: "false" });
  const eventsForm = h("form", { novalidate: true, "aria-label": "Which events" },
    toggle("Warning only", warningOnly, { field: "query.type" }),
    h("div", { class: "row" },
      field("Namespace", eventsNs, { field: "query.namespace", hint: "Empty or * for every namespace" }),
      field("Object", object, { field: "query.object", hint: "Optional: a pod's or node's name" })),
    formError(),
    h("button", { type: "submit" }, "Show events"));
  const eventsBox = h("div", { "aria-live": "polite" }, h("p", {}, "Reading events…"));
  const eventsSection = section("Kubernetes events", eventsForm, eventsBox);

  const eventsTurn = newestOnly();
  async function loadEvents() {
    const mine = eventsTurn();
    clearErrors(eventsForm);
    try {
      const answer = await get(`${base}/kubernetes-events${query({
        namespace: eventsNs.value.trim(), object: object.value.trim(), type: warningOnly.checked ? "Warning" : "",
      })}`);
      if (!mine()) return;
      const events = answer.events || [];
      remember(events.map((e) => e.object && e.object.namespace));
      fill(eventsBox, events.length
        ? [h("p", { class: "hint" }, `${events.length} of ${answer.matched ?? events.length} matching events, newest last. Kubernetes keeps events for about an hour.`),
          table("Kubernetes events, newest last", ["Type", "Reason", "Object", "Message", "Count", "Last seen"],
            events.map((e) => {
              const warn = e.type === "Warning";
              const o = e.object || {};
              return h("tr", { class: warn ? "warn" : null, "data-object": o.name || "" },
                h("td", { "data-label": "Type" }, warn ? statusBadge("Warning", true) : e.type || ""),
                h("td", { "data-label": "Reason" }, e.reason || ""),
                h("td", { "data-label": "Object", class: "wrap" }, `${o.kind || ""}/${o.name || ""}`,
                  o.namespace ? h("span", { class: "hint" }, h("br"), o.namespace) : null),
                h("td", { "data-label": "Message", class: "wrap" }, e.message || ""),
                h("td", { "data-label": "Count" }, String(e.count ?? 1)),
                h("td", { "data-label": "Last seen" }, ago(e.last_timestamp)));
            }))]
        : h("p", {}, "No events match."));
    } catch (error) {
      if (!mine()) return;
      fill(eventsBox);
      showErrors(eventsForm, error);
    }
  }
  eventsForm.addEventListener("submit", (event) => {
    event.preventDefault();
    loadEvents();
  });
  warningOnly.addEventListener("change", loadEvents);

  function eventsOf(p) {
    if (!p) return;
    eventsNs.value = p.namespace;
    object.value = p.name;
    eventsSection.querySelector("h2").setAttribute("tabindex", "-1");
    eventsSection.querySelector("h2").focus();
    loadEvents();
  }

  // ---- a pod's terminal (operators; the gateway refuses others and audits each session) ----
  const terminalHeading = h("h2", { tabindex: "-1" }, "Terminal");
  const terminalBox = h("div");
  const terminalSection = h("section", { class: "card", "aria-labelledby": nextId("terminal"), hidden: true },
    terminalHeading, terminalBox);
  terminalSection.setAttribute("aria-labelledby", terminalHeading.id = nextId("terminal-heading"));
  let session = null;
  function openTerminal(p) {
    if (session) session.close();
    session = podTerminal(name, p);
    terminalHeading.textContent = `Terminal of ${p.namespace}/${p.name}`;
    fill(terminalBox, session.element);
    terminalSection.hidden = false;
    terminalHeading.focus();
  }

  main.append(nsList, section("Pods", podsForm, podsBox), logSection, terminalSection, eventsSection);
  await Promise.all([loadPods(), loadEvents()]);
  return () => { if (session) session.close(); };
}
