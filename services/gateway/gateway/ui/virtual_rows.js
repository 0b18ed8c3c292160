// The body of a long table drawn as the user scrolls: only the rows in view, with a margin, are
// in the document; spacer rows stand for the others, so 10,000 rows scroll like 100. The table
// says how many rows it has and where each drawn one stands (aria-rowcount, aria-rowindex), and
// a row whose item did not change is the same element after a repaint (focus stays on it).
// Used by the paged tables (paged_table.js) and the fleet overview (views/fleet.js).

import { fill, h } from "./dom.js";

const MARGIN = 15; // rows drawn above and below the view

function spacer(columns) {
  const cell = h("td", { colspan: String(columns) });
  cell.style.padding = "0";
  cell.style.border = "0";
  return h("tr", { "aria-hidden": "true", class: "spacer" }, cell);
}

// The spacer of `px` pixels, or nothing when there is no row to stand for.
function sized(row, px) {
  row.firstChild.style.height = `${px}px`;
  return px > 0 ? [row] : [];
}

// columns: the header cells (a label, or a th of the caller's); row(item): its tr; key(item):
// what names an item among the others; nearEnd(): called when the rows drawn reach the end.
export function virtualRows({ caption, columns, row, key, label, className = "list", nearEnd = () => {} }) {
  let items = [];
  let placeholder = "";
  let rowHeight = 0;
  let measuredWidth = -1;
  let queued = false;
  let drawn = new Map(); // key -> { text, tr } of the rows in the document
  const top = spacer(columns.length);
  const bottom = spacer(columns.length);
  const head = h("tr", {}, ...columns.map((c) => (typeof c === "string" ? h("th", { scope: "col" }, c) : c)));
  const body = h("tbody");
  const table = h("table", { class: className },
    h("caption", { class: "visually-hidden" }, caption),
    h("thead", {}, head),
    body);
  const wrap = h("div", { class: "table-wrap", tabindex: "0", role: "region", "aria-label": label || `${caption} list` }, table);
  wrap.style.maxHeight = "70vh";
  wrap.style.overflowY = "auto";
  wrap.addEventListener("scroll", () => {
    if (queued) return;
    queued = true;
    requestAnimationFrame(() => {
      queued = false;
      paint();
    });
  });

  // The row of item `index`: the one drawn before when its item is the same.
  function rowOf(index, keep) {
    const item = items[index];
    const name = String(key(item));
    const text = JSON.stringify(item);
    const before = drawn.get(name);
    const tr = before && before.text === text ? before.tr : row(item);
    tr.setAttribute("aria-rowindex", String(index + 2)); // the header row is row 1
    keep.set(name, { text, tr });
    return tr;
  }

  // Put `wanted` in the body in that order, moving none of the rows that stay.
  function place(wanted) {
    const stay = new Set(wanted);
    for (const child of [...body.children]) if (!stay.has(child)) child.remove();
    wanted.forEach((node, i) => {
      if (body.children[i] !== node) body.insertBefore(node, body.children[i] || null);
    });
  }

  function paint() {
    table.setAttribute("aria-rowcount", String(items.length + 1));
    if (!items.length) {
      drawn = new Map();
      fill(body, h("tr", {}, h("td", { colspan: String(columns.length) }, placeholder)));
      nearEnd();
      return;
    }
    const keep = new Map();
    if (!rowHeight || wrap.clientWidth !== measuredWidth) {
      // the height of a row at this width (narrow screens stack a row's cells)
      place([rowOf(0, keep)]);
      rowHeight = body.firstChild.getBoundingClientRect().height || 40;
      measuredWidth = wrap.clientWidth;
    }
    const view = wrap.clientHeight || window.innerHeight;
    const start = Math.max(0, Math.floor(wrap.scrollTop / rowHeight) - MARGIN);
    const end = Math.min(items.length, Math.ceil((wrap.scrollTop + view) / rowHeight) + MARGIN);
    const rows = [];
    for (let i = start; i < end; i += 1) rows.push(rowOf(i, keep));
    place([...sized(top, start * rowHeight), ...rows, ...sized(bottom, (items.length - end) * rowHeight)]);
    drawn = keep;
    if (end >= items.length - MARGIN) nearEnd();
  }

  return {
    element: wrap,
    head,
    // Show `list` (the whole list, in order); `empty` says why there is no row.
    show(list, empty) {
      items = list;
      placeholder = empty;
      paint();
    },
  };
}
