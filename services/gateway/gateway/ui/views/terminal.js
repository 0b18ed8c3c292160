// A small dependency-free terminal for one pod, over the gateway's WebSocket to the pod's exec
// subresource (operators only; each session is audited, nothing typed is stored). One line is
// sent at a time and run as `sh -c LINE` in the container; its output and exit code come back.
// Up and Down recall the lines typed in this session.

import { token } from "../api.js";
import { h } from "../dom.js";

export function podTerminal(cluster, pod) {
  const screen = h("pre", { class: "terminal-screen", role: "log", "aria-live": "polite", "aria-label": `Terminal of ${pod.name}` });
  const input = h("input", { class: "terminal-input", "aria-label": "Command", autocomplete: "off", spellcheck: "false", disabled: true });
  const state = h("p", { class: "hint", role: "status" }, "Connecting…");
  const history = [];
  let back = 0;
  const write = (text, cls) => screen.append(h("span", { class: cls || null }, text));
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const path = `/api/v1/clusters/${encodeURIComponent(cluster)}/pods/${encodeURIComponent(pod.namespace)}/${encodeURIComponent(pod.name)}/terminal/ws`;
  const socket = new WebSocket(`${scheme}://${location.host}${path}`, ["hyperpilot.bearer", token()]);
  socket.addEventListener("message", (event) => {
    const frame = JSON.parse(event.data);
    if (frame.ready) {
      state.textContent = `Connected to ${pod.namespace}/${pod.name}. Each line runs as sh -c in the container.`;
      input.disabled = false;
      input.focus();
    } else if (frame.error) {
      write(`${frame.error.message}${frame.error.hint ? ` (${frame.error.hint})` : ""}\n`, "terminal-error");
      if (frame.error.code === "forbidden") state.textContent = "Refused.";
    } else {
      write(frame.output || "");
      if (frame.exit_code) write(`[exit ${frame.exit_code}]\n`, "terminal-error");
    }
    screen.scrollTop = screen.scrollHeight;
  });
  socket.addEventListener("close", () => {
    input.disabled = true;
    if (!state.textContent.startsWith("Refused")) state.textContent = "Disconnected.";
  });
  input.addEventListener("keydown", (event) => {
    if (event.key === "ArrowUp" || event.key === "ArrowDown") {
      if (!history.length) return;
      back = Math.max(0, Math.min(history.length, back + (event.key === "ArrowUp" ? 1 : -1)));
      input.value = back ? history[history.length - back] : "";
      event.preventDefault();
      return;
    }
    if (event.key !== "Enter" || !input.value.trim()) return;
    const line = input.value;
    history.push(line);
    back = 0;
    write(`$ ${line}\n`, "terminal-prompt");
    socket.send(line);
    input.value = "";
  });
  const element = h("div", { class: "terminal" }, state, screen, h("label", { class: "terminal-line" }, "$ ", input));
  return { element, close: () => socket.close() };
}
