// A pod's terminal: xterm.js (vendored, see `make ui-vendor`) over the gateway's WebSocket to the
// pod's exec subresource with a TTY (operators only; each session is audited, nothing typed is
// stored; its stylesheet is linked from index.html). Keystrokes go out as they are typed, the terminal's output comes back as the shell
// writes it, and the terminal's size follows its box (the resize channel).

import { token } from "../api.js";
import { h } from "../dom.js";
import { Terminal } from "../vendor/xterm.js";
import { FitAddon } from "../vendor/addon-fit.js";

export function podTerminal(cluster, pod) {
  const state = h("p", { class: "hint", role: "status" }, "Connecting…");
  const screen = h("div", { class: "terminal-screen", "data-terminal": pod.name });
  const term = new Terminal({
    cursorBlink: true,
    convertEol: false,
    fontFamily: "ui-monospace, SFMono-Regular, Menlo, Consolas, monospace",
    fontSize: 14,
    scrollback: 2000,
    screenReaderMode: true,
    theme: { background: "#111111", foreground: "#e8e8e8" },
  });
  const fit = new FitAddon();
  term.loadAddon(fit);
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const path = `/api/v1/clusters/${encodeURIComponent(cluster)}/pods/${encodeURIComponent(pod.namespace)}/${encodeURIComponent(pod.name)}/terminal/ws`;
  let socket = null;
  let ready = false;
  const send = (frame) => { if (ready && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(frame)); };
  const observer = new ResizeObserver(() => {
    if (!screen.isConnected) return;
    fit.fit();
  });
  term.onResize(({ cols, rows }) => send({ resize: { cols, rows } }));
  term.onData((data) => send({ data }));

  function connect() {
    fit.fit();
    const params = new URLSearchParams({ tty: "true", rows: String(term.rows), cols: String(term.cols) });
    socket = new WebSocket(`${scheme}://${location.host}${path}?${params}`, ["hyperpilot.bearer", token()]);
    socket.addEventListener("message", (event) => {
      const frame = JSON.parse(event.data);
      if (frame.ready) {
        ready = true;
        state.textContent = `Connected to ${pod.namespace}/${pod.name}: a shell with a terminal in the container.`;
        term.focus();
      } else if (frame.error) {
        term.write(`\r\n\x1b[31m${frame.error.message}${frame.error.hint ? ` (${frame.error.hint})` : ""}\x1b[0m\r\n`);
        state.textContent = frame.error.code === "forbidden" ? `Refused: ${frame.error.message}` : frame.error.message;
      } else if (frame.closed) {
        state.textContent = `Session ended: ${frame.reason}${frame.exit_code ? ` (exit ${frame.exit_code})` : ""}.`;
      } else if (frame.output) {
        term.write(frame.output);
      }
    });
    socket.addEventListener("close", () => {
      ready = false;
      if (state.textContent.startsWith("Connecting") || state.textContent.startsWith("Connected")) state.textContent = "Disconnected.";
    });
  }

  const element = h("div", { class: "terminal" }, state, screen);
  // xterm measures its cells once it is in the page: open it when the box is attached
  requestAnimationFrame(function attach() {
    if (!screen.isConnected) { requestAnimationFrame(attach); return; }
    term.open(screen);
    observer.observe(screen);
    connect();
  });
  return {
    element,
    close: () => { observer.disconnect(); if (socket) socket.close(); term.dispose(); },
  };
}
