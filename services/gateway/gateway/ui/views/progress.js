// The progress panel of one operation: each stage with its state, elapsed time and latest
// message, live from the event stream (filtered by operation id); retry when failed, cancel
// while running.

import { get, post, streamEvents } from "../api.js";
import { zoneRetry } from "../capacity_retry.js";
import { announce, badge, elapsed, errorText, h, nextId, fill } from "../dom.js";

const TERMINAL = new Set(["succeeded", "failed", "cancelled", "noop"]);

export function progressPanel(operationId, { onFinished } = {}) {
  const headingId = nextId("progress");
  const heading = h("h2", { id: headingId, tabindex: "-1" }, "Progress");
  const summary = h("p", { class: "op-summary", "aria-live": "polite" }, "Loading…");
  const controls = h("div", { class: "actions" });
  const list = h("ol", { class: "stages", "aria-live": "polite", "aria-relevant": "text" });
  const streamState = h("p", { class: "hint stream-state" });
  const panel = h(
    "section",
    { class: "card progress", "aria-labelledby": headingId, "data-operation": operationId },
    heading,
    summary,
    controls,
    list,
    streamState,
  );

  let op = null;
  const rows = new Map();
  let stream = null;
  let timer = null;
  let finished = false;

  function stageRow(stage) {
    const row = h("li", { class: "stage", "data-stage": stage.name });
    rows.set(stage.name, row);
    return row;
  }

  function paintStage(stage) {
    const row = rows.get(stage.name) || stageRow(stage);
    row.dataset.status = stage.status;
    // a finished stage's last progress line is history: only running and failed ones say more
    const message =
      stage.status === "failed"
        ? errorText(stage.error)
        : stage.status === "noop"
          ? "not needed: already in place"
          : TERMINAL.has(stage.status)
            ? ""
            : stage.progress || stage.message || "";
    const retry =
      stage.status === "failed" && op.status === "failed"
        ? h(
            "button",
            {
              type: "button",
              class: "small",
              "aria-label": `Retry stage ${stage.title || stage.name}`,
              onclick: retryOperation,
            },
            "Retry",
          )
        : null;
    fill(row, 
      h("span", { class: "stage-title" }, stage.title || stage.name),
      badge(stage.status),
      h(
        "span",
        { class: "stage-elapsed", "data-started": stage.started_at || "", "data-finished": stage.finished_at || "" },
        elapsed(stage.started_at, stage.finished_at),
      ),
      h("span", { class: "stage-message" }, message),
      retry,
      stage.status === "failed" ? zoneRetry(op, stage) : null,
    );
  }

  function paintSummary() {
    fill(summary, 
      h("strong", {}, op.kind),
      " on ",
      `${op.target_type} ${op.target_id}: `,
      badge(op.status),
      op.status === "failed" && op.error ? h("span", { class: "op-error" }, ` ${errorText(op.error)}`) : null,
      op.cancel_requested && !TERMINAL.has(op.status) ? " (cancel requested)" : null,
      " ",
      h("span", { class: "op-elapsed", "data-started": op.created_at || "", "data-finished": op.finished_at || "" },
        op.created_at ? `${TERMINAL.has(op.status) ? "took" : "for"} ${elapsed(op.created_at, op.finished_at)}` : ""),
      op.stages && op.stages.length ? ` · ${op.stages.filter((s) => TERMINAL.has(s.status)).length} of ${op.stages.length} stages done` : null,
    );
    fill(controls);
    if (!TERMINAL.has(op.status) && !op.cancel_requested) {
      controls.append(h("button", { type: "button", class: "secondary", onclick: cancelOperation }, "Cancel operation"));
    }
    if (op.status === "failed") {
      controls.append(h("button", { type: "button", onclick: retryOperation }, "Retry failed stages"));
    }
  }

  function paintAll() {
    paintSummary();
    fill(list);
    rows.clear();
    for (const stage of op.stages || []) {
      list.append(stageRow(stage));
      paintStage(stage);
    }
  }

  function tick() {
    const total = summary.querySelector(".op-elapsed");
    if (total && total.dataset.started && !total.dataset.finished) {
      total.textContent = `for ${elapsed(total.dataset.started, null)}`;
    }
    for (const el of list.querySelectorAll(".stage-elapsed")) {
      if (el.dataset.started && !el.dataset.finished) {
        el.textContent = elapsed(el.dataset.started, null);
      }
    }
  }

  function stage(name) {
    let s = (op.stages || []).find((x) => x.name === name);
    if (!s) {
      s = { name, title: name, status: "pending" };
      op.stages = [...(op.stages || []), s];
      list.append(stageRow(s));
    }
    return s;
  }

  function onEvent(event) {
    // an event that arrives while the operation is read again is applied on top of that read
    for (const late of reading) late.push(event);
    const p = event.payload || {};
    const at = event.occurred_at;
    switch (event.type) {
      case "StageStarted": {
        const s = stage(p.stage);
        Object.assign(s, { status: "running", title: p.title || s.title, started_at: at, finished_at: null, error: null, progress: null });
        paintStage(s);
        announce(`${s.title}: running`);
        return;
      }
      case "StageProgress": {
        const s = stage(p.stage);
        s.progress = p.message;
        paintStage(s);
        return;
      }
      case "StageRetrying": {
        const s = stage(p.stage);
        s.progress = `retrying in ${Math.round(p.delay_seconds)}s: ${errorText(p.error)}`;
        paintStage(s);
        return;
      }
      case "StageSucceeded": {
        const s = stage(p.stage);
        Object.assign(s, { status: p.noop ? "noop" : "succeeded", finished_at: at, progress: null });
        paintStage(s);
        paintSummary();
        announce(`${s.title}: ${s.status}`);
        return;
      }
      case "StageFailed": {
        const s = stage(p.stage);
        Object.assign(s, { status: "failed", finished_at: at, error: p.error });
        paintStage(s);
        announce(`${s.title}: failed`);
        return;
      }
      case "OperationStarted":
        // the whole plan (every stage, in its order) is recorded as the operation starts
        refresh();
        return;
      case "CancelRequested":
        op.cancel_requested = true;
        paintSummary();
        return;
      case "OperationRetried":
      case "OperationSucceeded":
      case "OperationFailed":
      case "OperationCancelled":
      case "OperationNoop":
        refresh();
        return;
      default:
    }
  }

  const reading = new Set(); // per read in flight: the events that arrived during it
  async function refresh() {
    const late = [];
    reading.add(late);
    try {
      op = await get(`/operations/${operationId}`);
    } finally {
      reading.delete(late);
    }
    paintAll();
    for (const event of late) if (!event.type.startsWith("Operation")) onEvent(event);
    if (TERMINAL.has(op.status) && !finished) {
      finished = true;
      announce(`Operation ${op.status}`);
      if (onFinished) onFinished(op);
    } else if (!TERMINAL.has(op.status)) {
      finished = false;
    }
    return op;
  }

  async function retryOperation() {
    try {
      await post(`/operations/${operationId}/retry`);
      announce("Retrying the failed stages");
      await refresh();
    } catch (error) {
      streamState.textContent = errorText(error);
    }
  }

  async function cancelOperation() {
    try {
      await post(`/operations/${operationId}/cancel`);
      announce("Cancel requested");
      await refresh();
    } catch (error) {
      streamState.textContent = errorText(error);
    }
  }

  async function start() {
    try {
      await refresh();
    } catch (error) {
      summary.textContent = errorText(error);
      return;
    }
    const after = Math.max(0, ...(op.events || []).map((e) => e.seq));
    stream = streamEvents({
      after,
      operationId,
      onEvent,
      onState: (state) => {
        panel.dataset.stream = state;
        streamState.textContent = state === "live" ? "Live" : state === "reconnecting" ? "Reconnecting…" : "";
      },
    });
    timer = setInterval(tick, 1000);
  }

  start();
  return {
    element: panel,
    focus: () => heading.focus(),
    stop() {
      if (stream) stream.stop();
      if (timer) clearInterval(timer);
    },
  };
}
