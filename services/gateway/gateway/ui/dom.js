// Small DOM helpers shared by the views: element builder, field errors, confirmation, status.

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") {
      el.addEventListener(key.slice(2).toLowerCase(), value);
    } else if (key === "class") {
      el.className = value;
    } else if (key === "text") {
      el.textContent = value;
    } else if (value === true) {
      el.setAttribute(key, "");
    } else {
      el.setAttribute(key, value);
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

// Reads of one place where only the newest answer may be shown: `const turn = newestOnly();`
// then, per read, `const mine = turn();` and after the await `if (!mine()) return;`. An early
// read (a page's first, default one) that comes back late must not overwrite a later one.
export function newestOnly() {
  let asked = 0;
  return () => {
    const mine = ++asked;
    return () => mine === asked;
  };
}

let uid = 0;
export function nextId(prefix) {
  uid += 1;
  return `${prefix}-${uid}`;
}

// A labelled control with a slot for its error; `field` is the API's field path.
export function field(label, control, { field: name, hint } = {}) {
  const id = control.id || nextId("f");
  control.id = id;
  if (name) control.dataset.field = name;
  const hintEl = hint ? h("p", { class: "hint", id: `${id}-hint` }, hint) : null;
  const errorEl = h("p", { class: "field-error", id: `${id}-error`, hidden: true });
  const described = [hintEl ? hintEl.id : null, errorEl.id].filter(Boolean).join(" ");
  control.setAttribute("aria-describedby", described);
  return h("div", { class: "field" }, h("label", { for: id }, label), control, hintEl, errorEl);
}

// "instance_groups[0].instance_type", "instance_groups.0.instance_type", "body.name" -> one form.
export function normalizeField(path) {
  return String(path || "")
    .replace(/\[(\d+)\]/g, ".$1")
    .replace(/^body\./, "")
    .replace(/^\./, "");
}

export function clearErrors(form) {
  for (const el of form.querySelectorAll(".field-error")) {
    el.hidden = true;
    el.textContent = "";
  }
  for (const el of form.querySelectorAll("[aria-invalid]")) el.removeAttribute("aria-invalid");
  const summary = form.querySelector(".form-error");
  if (summary) {
    summary.hidden = true;
    summary.textContent = "";
  }
}

// Put each error next to the input it is about; what matches no input goes to the form's summary.
export function showErrors(form, error) {
  clearErrors(form);
  const controls = [...form.querySelectorAll("[data-field]")];
  const unplaced = [];
  let first = null;
  for (const item of error.fields || []) {
    const name = normalizeField(item.field);
    // "pytorch.name": a field inside the variant a union chose is the form's "name"
    const variant = name.split(".").slice(1).join(".");
    const control =
      controls.find((c) => c.dataset.field === name) ||
      controls.find((c) => name.startsWith(`${c.dataset.field}.`)) ||
      (variant && controls.find((c) => c.dataset.field === variant || variant.startsWith(`${c.dataset.field}.`)));
    const text = [item.message, item.hint].filter(Boolean).join(" — ");
    if (!control) {
      unplaced.push(`${item.field}: ${text}`);
      continue;
    }
    const slot = form.querySelector(`#${CSS.escape(control.id)}-error`);
    slot.textContent = slot.textContent ? `${slot.textContent} ${text}` : text;
    slot.hidden = false;
    control.setAttribute("aria-invalid", "true");
    if (!first) first = control;
  }
  const summary = form.querySelector(".form-error");
  if (summary && (unplaced.length || !first)) {
    const lines = unplaced.length ? unplaced : [error.message];
    if (error.hint && !unplaced.length) lines.push(error.hint);
    summary.textContent = lines.join(" ");
    summary.hidden = false;
  }
  (first || summary)?.focus();
}

export function formError() {
  return h("p", { class: "form-error", role: "alert", tabindex: "-1", hidden: true });
}

// A modal confirmation (native <dialog>: focus trapped, Escape cancels); `lines` is the plan of
// the change in words (plan.js), shown as a list.
export function confirmAction(message, confirmLabel = "Confirm", lines = []) {
  return new Promise((resolve) => {
    const dialog = h(
      "dialog",
      { class: "confirm", "aria-labelledby": "confirm-title" },
      h("h2", { id: "confirm-title" }, "Please confirm"),
      h("p", {}, message),
      lines.length ? h("ul", { class: "diff", "aria-label": "Plan" }, ...lines.map((l) => h("li", {}, l))) : null,
      h(
        "div",
        { class: "actions" },
        h("button", { type: "button", value: "cancel", class: "secondary" }, "Cancel"),
        h("button", { type: "button", value: "ok", class: "danger" }, confirmLabel),
      ),
    );
    const done = (answer) => {
      dialog.close();
      dialog.remove();
      resolve(answer);
    };
    dialog.addEventListener("cancel", () => done(false));
    for (const button of dialog.querySelectorAll("button")) {
      button.addEventListener("click", () => done(button.value === "ok"));
    }
    document.body.append(dialog);
    dialog.showModal();
    dialog.querySelector("button.secondary").focus();
  });
}

const STATUS_ICON = {
  succeeded: "✓",
  noop: "✓",
  installed: "✓",
  healthy: "✓",
  active: "✓",
  inservice: "✓",
  available: "✓",
  enabled: "✓",
  running: "◐",
  creating: "◐",
  updating: "◐",
  deleting: "◐",
  pending: "○",
  waiting: "○",
  accepted: "○",
  failed: "✕",
  unhealthy: "✕",
  cancelled: "⊘",
  skipped: "–",
};

// A status is a word plus an icon, never a color alone.
export function badge(status) {
  const s = String(status ?? "unknown");
  const key = s.toLowerCase().replace(/[^a-z]/g, "");
  return h(
    "span",
    { class: `badge status-${key}` },
    h("span", { "aria-hidden": "true" }, STATUS_ICON[key] || "•"),
    " ",
    s,
  );
}

export function when(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  return h("time", { datetime: iso, title: iso }, d.toLocaleString());
}

export function elapsed(fromIso, toIso) {
  if (!fromIso) return "";
  const end = toIso ? new Date(toIso) : new Date();
  const s = Math.max(0, Math.round((end - new Date(fromIso)) / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${s % 60}s`;
  return `${Math.floor(m / 60)}h ${m % 60}m`;
}

export function announce(text) {
  const region = document.getElementById("announcer");
  if (!region) return;
  region.textContent = "";
  setTimeout(() => {
    region.textContent = text;
  }, 30);
}

export function operationLink(id, label = "View the operation") {
  return h("a", { href: `#/operations/${id}` }, label);
}

export function section(title, ...children) {
  const id = nextId("s");
  return h("section", { class: "card", "aria-labelledby": id }, h("h2", { id }, title), ...children);
}

// A section as wide as the page, for a table that needs the room (instance groups, nodes).
export function wideSection(title, ...children) {
  const el = section(title, ...children);
  el.classList.add("wide");
  return el;
}

export function errorText(error) {
  if (!error) return "";
  const parts = [error.message || String(error)];
  if (error.hint) parts.push(error.hint);
  return parts.join(" — ");
}

// replaceChildren that skips null/false children (a missing part renders as nothing).
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}
