// REST and live-event client of the gateway. The token lives in sessionStorage (this tab only)
// and travels as `Authorization: Bearer`; every request says it comes from the UI.

const TOKEN_KEY = "hyperpilot.token";
const API = "/api/v1";

export class ApiError extends Error {
  constructor(status, body) {
    const error = (body && body.error) || {};
    super(error.message || `HTTP ${status}`);
    this.status = status;
    this.code = error.code || "http_error";
    this.hint = error.hint || "";
    this.fields = error.fields || [];
    this.body = body;
  }
}

export function token() {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function setToken(value) {
  if (value) sessionStorage.setItem(TOKEN_KEY, value);
  else sessionStorage.removeItem(TOKEN_KEY);
}

function headers(extra = {}) {
  const h = { "X-Hyperpilot-Source": "ui", ...extra };
  const t = token();
  if (t) h.Authorization = `Bearer ${t}`;
  return h;
}

export async function request(method, path, body, options = {}) {
  const init = { method, headers: headers(options.headers) };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(`${API}${path}`, init);
  const text = await response.text();
  let data = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = text;
    }
  }
  if (!response.ok) {
    const error = new ApiError(response.status, data);
    if (response.status === 401 && !options.quiet) window.dispatchEvent(new CustomEvent("hp:unauthorized"));
    throw error;
  }
  // a text answer with its headers (a log and what it is about), not parsed as JSON
  if (options.text) return { text, headers: response.headers };
  return data;
}

export const get = (path, options) => request("GET", path, undefined, options);
export const post = (path, body) => request("POST", path, body ?? {});
export const put = (path, body) => request("PUT", path, body);
export const patch = (path, body) => request("PATCH", path, body);
export const del = (path) => request("DELETE", path);

export function query(params) {
  const q = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== "") q.set(key, value);
  }
  const s = q.toString();
  return s ? `?${s}` : "";
}

// Live events over Server-Sent Events, read with fetch (EventSource cannot send a bearer token).
// The stream resumes from the last sequence number seen (Last-Event-ID) after any disconnect.
export function streamEvents({ after = 0, operationId = null, onEvent, onState = () => {} }) {
  let last = after;
  let stopped = false;
  let controller = null;

  function dispatch(block) {
    let data = "";
    for (const line of block.split("\n")) {
      if (line.startsWith("data:")) data += line.slice(5).trimStart();
    }
    if (!data) return;
    const event = JSON.parse(data);
    if (typeof event.seq === "number") {
      if (event.seq <= last) return;
      last = event.seq;
    }
    onEvent(event);
  }

  async function run() {
    let delay = 500;
    while (!stopped) {
      controller = new AbortController();
      try {
        const response = await fetch(
          `${API}/events/stream${query({ operation_id: operationId })}`,
          { headers: headers({ Accept: "text/event-stream", "Last-Event-ID": String(last) }), signal: controller.signal },
        );
        if (!response.ok) throw new ApiError(response.status, await response.json().catch(() => null));
        onState("live");
        delay = 500;
        const reader = response.body.getReader();
        const decoder = new TextDecoder();
        let buffer = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += decoder.decode(value, { stream: true }).replace(/\r\n/g, "\n");
          let cut;
          while ((cut = buffer.indexOf("\n\n")) >= 0) {
            dispatch(buffer.slice(0, cut));
            buffer = buffer.slice(cut + 2);
          }
        }
      } catch (error) {
        if (stopped) return;
        if (error instanceof ApiError && error.status === 401) {
          onState("unauthorized");
          return;
        }
      }
      if (stopped) return;
      onState("reconnecting");
      await new Promise((resolve) => setTimeout(resolve, delay));
      delay = Math.min(delay * 2, 8000);
    }
  }

  run();
  return {
    stop() {
      stopped = true;
      if (controller) controller.abort();
    },
    get last() {
      return last;
    },
  };
}

// A page of a REST list paged by cursor: its rows (the answer, or its `items`), the next page's
// token (null on the last page) and how many rows the whole list has.
export async function getPage(path) {
  const { text, headers } = await request("GET", path, undefined, { text: true });
  const body = text ? JSON.parse(text) : [];
  return {
    items: Array.isArray(body) ? body : body.items || [],
    next: headers.get("X-Next-Page-Token"),
    total: Number(headers.get("X-Total-Count") || 0),
  };
}
