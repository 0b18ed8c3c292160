// A table of a REST list paged by cursor (X-Next-Page-Token): the next page loads as the user
// scrolls near the end of what is loaded (or presses "Load more"), or, for a list the page
// searches as a whole, every page loads one after the other; only the rows in view are in the
// document (virtual_rows.js), so a list of 10,000 jobs scrolls like one of 100.

import { getPage } from "./api.js";
import { errorText, h } from "./dom.js";
import { virtualRows } from "./virtual_rows.js";

const LIMIT = 200; // rows a page asks for
const REREAD = 1000; // the most rows one request of a reread asks for (unless the list allows fewer)

// all: read every page (the page filters the whole list); loaded(items): called each time the
// whole list has been read (the last page loaded, or a reread); most: the largest page the list
// allows. A filter (filter()) keeps reading pages while its matches do not fill the view.
export function pagedTable({ path, caption, label, columns, row, key, empty, noun, all = false, most = REREAD, loaded = () => {} }) {
  const join = path.includes("?") ? "&" : "?";
  let items = [];
  let next = null;
  let total = 0;
  let started = false;
  let loading = null;
  let keep = null; // the filter, if any
  let stopped = false; // the page left: no more pages
  let reads = 0; // rereads so far: a page asked for before one is not added after it
  const rows = virtualRows({ caption, label, columns, row, key, nearEnd: () => { if (next) loadMore(); } });
  const count = h("p", { class: "muted", role: "status", "data-count": "" });
  const more = h("button", { type: "button", class: "secondary", hidden: true }, "Load more");
  more.addEventListener("click", () => loadMore());

  function paint() {
    const shown = keep ? items.filter(keep) : items;
    const matching = keep && started ? `; ${shown.length} match` : "";
    count.textContent = started ? `${items.length} of ${total} ${noun} loaded${matching}` : "";
    more.hidden = all || !next;
    const reading = !started || (keep && next);
    rows.show(shown, reading ? "Loading…" : keep && items.length ? `No ${noun} match.` : empty);
  }

  function loadMore() {
    if (stopped || loading || (started && !next)) return loading;
    const token = next ? `&page_token=${encodeURIComponent(next)}` : "";
    const asked = reads;
    loading = getPage(`${path}${join}limit=${LIMIT}${token}`)
      .then((page) => {
        if (asked !== reads) return;
        items = items.concat(page.items);
        next = page.next;
        total = page.total;
        started = true;
        if (!next) loaded(items);
      })
      .catch((error) => {
        count.textContent = errorText(error);
      })
      .finally(() => {
        loading = null;
        paint();
        if (all && next) loadMore();
      });
    return loading;
  }

  // Read again the rows loaded so far (a page or more), after a change: statuses move, rows come.
  async function reread() {
    while (loading) await loading;
    const want = Math.max(items.length, LIMIT);
    let fresh = [];
    let token = null;
    let page = null;
    try {
      do {
        const limit = Math.min(most, all ? most : want - fresh.length);
        const after = token ? `&page_token=${encodeURIComponent(token)}` : "";
        page = await getPage(`${path}${join}limit=${limit}${after}`);
        fresh = fresh.concat(page.items);
        token = page.next;
      } while (token && (all || fresh.length < want));
    } catch (error) {
      count.textContent = errorText(error);
      return;
    }
    if (stopped) return;
    reads += 1;
    items = fresh;
    next = token;
    total = page.total;
    started = true;
    if (!next) loaded(items);
    paint();
  }

  return {
    element: h("div", {}, rows.element, h("div", { class: "actions" }, count, more)),
    load: loadMore,
    reread,
    stop() {
      stopped = true;
    },
    // show only the loaded rows `predicate` keeps (null: all of them)
    filter(predicate) {
      keep = predicate;
      paint();
    },
  };
}
