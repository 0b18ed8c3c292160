// A table of a REST list paged by cursor (X-Next-Page-Token): the next page loads as the user
// scrolls near the end of what is loaded (or presses "Load more"), and only the rows in view,
// with a margin, are in the document: spacer rows stand for the others, so a list of 10,000
// jobs scrolls like one of 100.

import { getPage } from "./api.js";
import { errorText, fill, h } from "./dom.js";

const LIMIT = 200; // rows a page asks for
const MARGIN = 15; // rows drawn above and below the view
const REREAD = 1000; // the most rows one request of a reread asks for

function spacer(columns) {
  const cell = h("td", { colspan: String(columns) });
  cell.style.padding = "0";
  cell.style.border = "0";
  return h("tr", { "aria-hidden": "true", class: "spacer" }, cell);
}

function setHeight(row, px) {
  row.hidden = px <= 0;
  row.firstChild.style.height = `${px}px`;
}

export function pagedTable({ path, caption, columns, row, empty, noun }) {
  const join = path.includes("?") ? "&" : "?";
  let items = [];
  let next = null;
  let total = 0;
  let started = false;
  let loading = null;
  let rowHeight = 0;
  let queued = false;
  const top = spacer(columns.length);
  const bottom = spacer(columns.length);
  const body = h("tbody");
  const wrap = h("div", { class: "table-wrap", tabindex: "0", role: "region", "aria-label": `${caption} list` },
    h("table", { class: "list" },
      h("caption", { class: "visually-hidden" }, caption),
      h("thead", {}, h("tr", {}, ...columns.map((c) => h("th", { scope: "col" }, c)))),
      body));
  wrap.style.maxHeight = "70vh";
  wrap.style.overflowY = "auto";
  const count = h("p", { class: "muted", role: "status", "data-count": "" });
  const more = h("button", { type: "button", class: "secondary", hidden: true }, "Load more");
  more.addEventListener("click", () => loadMore());
  wrap.addEventListener("scroll", () => {
    if (queued) return;
    queued = true;
    requestAnimationFrame(() => {
      queued = false;
      paint();
    });
  });

  function paint() {
    count.textContent = started ? `${items.length} of ${total} ${noun} loaded` : "";
    more.hidden = !next;
    if (!items.length) {
      fill(body, h("tr", {}, h("td", { colspan: String(columns.length) }, started ? empty : "Loading…")));
      return;
    }
    if (!rowHeight) {
      fill(body, row(items[0]));
      rowHeight = body.firstChild.getBoundingClientRect().height || 40;
    }
    const view = wrap.clientHeight || window.innerHeight;
    const start = Math.max(0, Math.floor(wrap.scrollTop / rowHeight) - MARGIN);
    const end = Math.min(items.length, Math.ceil((wrap.scrollTop + view) / rowHeight) + MARGIN);
    setHeight(top, start * rowHeight);
    setHeight(bottom, (items.length - end) * rowHeight);
    fill(body, top, ...items.slice(start, end).map(row), bottom);
    if (next && end >= items.length - MARGIN) loadMore();
  }

  function loadMore() {
    if (loading || (started && !next)) return loading;
    const token = next ? `&page_token=${encodeURIComponent(next)}` : "";
    loading = getPage(`${path}${join}limit=${LIMIT}${token}`)
      .then((page) => {
        items = items.concat(page.items);
        next = page.next;
        total = page.total;
        started = true;
      })
      .catch((error) => {
        count.textContent = errorText(error);
      })
      .finally(() => {
        loading = null;
        paint();
      });
    return loading;
  }

  // Read again the rows loaded so far (a page or more), after a change: statuses move, rows come.
  async function reread() {
    if (loading) await loading;
    const want = Math.max(items.length, LIMIT);
    let fresh = [];
    let token = null;
    let page = null;
    try {
      do {
        const limit = Math.min(REREAD, want - fresh.length);
        const after = token ? `&page_token=${encodeURIComponent(token)}` : "";
        page = await getPage(`${path}${join}limit=${limit}${after}`);
        fresh = fresh.concat(page.items);
        token = page.next;
      } while (token && fresh.length < want);
    } catch (error) {
      count.textContent = errorText(error);
      return;
    }
    items = fresh;
    next = token;
    total = page.total;
    started = true;
    paint();
  }

  return { element: h("div", {}, wrap, h("div", { class: "actions" }, count, more)), load: loadMore, reread };
}
