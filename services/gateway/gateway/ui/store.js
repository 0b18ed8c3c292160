// The live store: what the open page shows, kept current by one event stream for the whole tab
// (SSE, resumed with Last-Event-ID after a drop). A page watches the API paths it shows; an
// event about a cluster re-reads the paths that concern that cluster, so every page follows
// changes made anywhere (this UI, REST, the CLI, MCP) without a reload or a polling loop.

import { get, streamEvents, token } from "./api.js";

const SEQ_KEY = "hyperpilot.seq";
// Events arrive in bursts (a stage starts, reports and succeeds): one read per burst.
const SETTLE_MS = 120;
// An operation's end is read once more a little later: its projection may land just after.
const AGAIN_MS = 700;

const watches = new Set();
const targets = new Map(); // operation id -> the cluster it changes
let stream = null;

// The cluster an event is about, or null when it cannot be told (then every watch re-reads).
function clusterOf(event) {
  const p = event.payload || {};
  if (event.type === "OperationAccepted" && event.operation_id && p.target_type === "cluster") {
    targets.set(event.operation_id, p.target_id);
  }
  if (typeof p.cluster === "string") return p.cluster;
  if (p.target_type === "cluster") return p.target_id;
  return targets.get(event.operation_id) ?? null;
}

function dispatch(event) {
  if (typeof event.seq === "number") sessionStorage.setItem(SEQ_KEY, String(event.seq));
  const cluster = clusterOf(event);
  const ended = /^Operation(Succeeded|Failed|Cancelled|Noop)$/.test(event.type);
  for (const w of watches) {
    if (w.cluster && cluster && w.cluster !== cluster) continue;
    w.schedule(SETTLE_MS);
    if (ended) w.schedule(AGAIN_MS);
  }
}

// Where the stream starts: the last event this tab saw, else the newest operation's last event
// (what came before is already in what the pages read).
async function startingSeq() {
  const saved = Number(sessionStorage.getItem(SEQ_KEY));
  if (saved > 0) return saved;
  try {
    const [newest] = (await get("/operations?limit=1")).items || [];
    if (!newest) return 0;
    const op = await get(`/operations/${newest.id}`);
    return Math.max(0, ...(op.events || []).map((e) => e.seq));
  } catch {
    return 0;
  }
}

async function connect() {
  if (stream || !token()) return;
  stream = { stop() {} };
  const after = await startingSeq();
  if (!token() || !watches.size) {
    stream = null;
    return;
  }
  stream = streamEvents({
    after,
    onEvent: dispatch,
    onState: (state) => {
      // back after a drop: what the pages show is read again (the stream resumes, too)
      if (state === "live" && document.documentElement.dataset.stream === "reconnecting") {
        for (const w of watches) w.schedule(0);
      }
      document.documentElement.dataset.stream = state;
      if (state === "unauthorized") disconnect();
    },
  });
}

export function disconnect() {
  if (stream) stream.stop();
  stream = null;
  sessionStorage.removeItem(SEQ_KEY);
}

// Read `path` now and again after each event about `cluster` (any event when null); `show`
// gets each answer that differs from the one before, `failed` each error. Returns the stop.
export function watch(path, show, { cluster = null, failed = () => {} } = {}) {
  let last = null;
  let timer = null;
  let reading = false;
  let again = false;
  const w = {
    cluster,
    schedule(ms) {
      if (timer) return;
      timer = setTimeout(read, ms);
    },
  };
  async function read() {
    timer = null;
    if (reading) {
      again = true;
      return;
    }
    reading = true;
    try {
      const data = await get(path);
      const text = JSON.stringify(data);
      if (watches.has(w) && text !== last) {
        last = text;
        show(data);
      }
    } catch (error) {
      if (watches.has(w)) failed(error);
    } finally {
      reading = false;
      if (again && watches.has(w)) {
        again = false;
        w.schedule(0);
      }
    }
  }
  watches.add(w);
  read();
  connect();
  return () => {
    watches.delete(w);
    clearTimeout(timer);
  };
}

// The same for a page section that reads more than one path or renders by itself: `reread` is
// called after each event about `cluster`.
export function onChange(reread, { cluster = null } = {}) {
  let timer = null;
  const w = {
    cluster,
    schedule(ms) {
      if (timer) return;
      timer = setTimeout(() => {
        timer = null;
        reread();
      }, ms);
    },
  };
  watches.add(w);
  connect();
  return () => {
    watches.delete(w);
    clearTimeout(timer);
  };
}
