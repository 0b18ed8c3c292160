// Hash routing: each page is a module under views/ that renders into <main>.
// A page module exports `render(main, params)` and may return a cleanup function.

import { setToken, token } from "./api.js";
import { disconnect } from "./store.js";
import { h, fill } from "./dom.js";
import * as signin from "./views/signin.js";
import * as clusters from "./views/clusters.js";
import * as create from "./views/create.js";
import * as cluster from "./views/cluster.js";
import * as operations from "./views/operations.js";
import * as audit from "./views/audit.js";
import * as training from "./views/training.js";
import * as inference from "./views/inference.js";
import * as diagnostics from "./views/diagnostics.js";
import * as tokens from "./views/tokens.js";
import * as models from "./views/models.js";
import * as software from "./views/software.js";
import * as mlflow from "./views/mlflow.js";
import * as trainingPlans from "./views/training_plans.js";
import * as spaces from "./views/spaces.js";
import * as teams from "./views/teams.js";

// [pattern, view, title]; pages for other areas register here with their own module.
export const routes = [
  [/^\/clusters$/, clusters, "Clusters"],
  [/^\/clusters\/new$/, create, "Create a cluster"],
  [/^\/clusters\/([^/]+)$/, cluster, "Cluster"],
  [/^\/clusters\/([^/]+)\/jobs$/, training, "Training"],
  [/^\/clusters\/([^/]+)\/jobs\/([^/]+)$/, training, "Job"],
  [/^\/clusters\/([^/]+)\/diagnostics$/, diagnostics, "Diagnostics"],
  [/^\/clusters\/([^/]+)\/models$/, models, "Model downloads"],
  [/^\/clusters\/([^/]+)\/software$/, software, "Software update"],
  [/^\/clusters\/([^/]+)\/spaces$/, spaces, "Spaces"],
  [/^\/clusters\/([^/]+)\/teams$/, teams, "Teams"],
  [/^\/mlflow$/, mlflow, "MLflow"],
  [/^\/training-plans$/, trainingPlans, "Training plans"],
  [/^\/endpoints$/, inference, "Endpoints"],
  [/^\/endpoints\/([^/]+)\/([^/]+)$/, inference, "Endpoint"],
  [/^\/operations$/, operations, "Operations"],
  [/^\/operations\/([^/]+)$/, operations, "Operation"],
  [/^\/audit$/, audit, "Audit"],
  [/^\/tokens$/, tokens, "API tokens"],
];

let cleanup = null;

function currentPath() {
  const path = location.hash.replace(/^#/, "") || "/clusters";
  return path.split("?")[0];
}

async function show() {
  const main = document.getElementById("main");
  if (typeof cleanup === "function") cleanup();
  cleanup = null;
  fill(main);
  document.getElementById("signout").hidden = !token();
  if (!token()) {
    document.title = "Sign in · Hyperpilot";
    cleanup = signin.render(main, { onSignedIn: show });
    return;
  }
  const path = currentPath();
  for (const link of document.querySelectorAll("#nav a")) {
    const here = path.startsWith(link.getAttribute("href").slice(1));
    if (here) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  for (const [pattern, view, title] of routes) {
    const match = path.match(pattern);
    if (!match) continue;
    const params = match.slice(1).map(decodeURIComponent);
    document.title = `${params[0] ? `${params[0]} · ` : ""}${title} · Hyperpilot`;
    try {
      cleanup = await view.render(main, params);
    } catch (error) {
      main.append(h("p", { class: "form-error", role: "alert" }, error.message));
    }
    return;
  }
  main.append(h("h1", {}, "Not found"), h("p", {}, h("a", { href: "#/clusters" }, "Back to clusters")));
}

window.addEventListener("hashchange", () => {
  // focus goes to the new page's content; a view may move it further (to its first field)
  document.getElementById("main").focus({ preventScroll: true });
  show();
});
window.addEventListener("hp:unauthorized", () => {
  setToken(null);
  disconnect();
  show();
});
document.getElementById("signout").addEventListener("click", () => {
  setToken(null);
  disconnect();
  show();
});

// A link may carry the token once in its fragment (#token=...): it moves to sessionStorage and
// leaves the address bar.
const fromHash = location.hash.match(/^#token=([^&]+)/);
if (fromHash) {
  setToken(decodeURIComponent(fromHash[1]));
  history.replaceState(null, "", "#/clusters");
}

show();
