// "Retry in the zone that has it": a cluster creation whose HyperPod stage failed for want of
// capacity (InsufficientInstanceCapacity). The stage's error names the zone that had none (in
// AWS's FailureMessage) and the other zones that offer the type (cluster-svc's hint: "try another
// Availability Zone (ml.g5.8xlarge is offered in use1-az1, use1-az4) ..."). One button per such
// zone submits the same creation in that zone: the failed cluster is deleted first (its name is
// taken while it exists), with the plan of that deletion shown and confirmed.

import { del, get, post, streamEvents } from "./api.js";
import { announce, confirmAction, errorText, h, operationLink } from "./dom.js";
import { dryRun, planLines } from "./plan.js";

const ZONE = /\b[a-z]{3,4}\d-az\d+\b/g;
const OFFERED = /(ml\.[a-z0-9.-]+) is offered in ([a-z0-9-]+(?:, [a-z0-9-]+)*)/g;
const FINISHED = new Set(["OperationSucceeded", "OperationFailed", "OperationCancelled", "OperationNoop"]);
const TERMINAL = new Set(["succeeded", "failed", "cancelled", "noop"]);

// { failed: [zones without capacity], zones: [zones offering every failed type, in order] }, or
// null when the error is not a capacity failure naming other zones.
export function capacityZones(error) {
  if (!error || error.code !== "InsufficientInstanceCapacity") return null;
  const failed = [...new Set(String(error.message || "").match(ZONE) || [])];
  const offers = [...String(error.hint || "").matchAll(OFFERED)].map((m) => m[2].split(", "));
  if (!offers.length) return null;
  const zones = offers.reduce((common, list) => common.filter((z) => list.includes(z)))
    .filter((z) => !failed.includes(z));
  return zones.length ? { failed, zones } : null;
}

// The creation request again, in `zone`: the cluster's zone, and every group that was placed in
// a zone that had no capacity.
export function inZone(request, failed, zone) {
  const body = JSON.parse(JSON.stringify(request));
  body.availability_zone_id = zone;
  for (const group of body.instance_groups || []) {
    if (group.availability_zone_id && failed.includes(group.availability_zone_id)) group.availability_zone_id = zone;
  }
  return body;
}

// Resolves with the operation once it has finished (followed on the event stream).
function finished(operationId) {
  return new Promise((resolve, reject) => {
    let done = false;
    const stream = streamEvents({
      operationId,
      onEvent: (event) => {
        if (FINISHED.has(event.type)) check();
      },
    });
    async function check() {
      try {
        const op = await get(`/operations/${operationId}`);
        if (TERMINAL.has(op.status) && !done) {
          done = true;
          stream.stop();
          resolve(op);
        }
      } catch (error) {
        done = true;
        stream.stop();
        reject(error);
      }
    }
    check();
  });
}

// The buttons for a failed stage of operation `op`, or null when it offers no such retry.
export function zoneRetry(op, stage) {
  if (op.kind !== "cluster.create" || op.status !== "failed" || !op.request) return null;
  const found = capacityZones(stage.error);
  if (!found) return null;
  const name = op.target_id;
  const status = h("p", { class: "hint zone-retry-status", role: "status" });

  async function retry(zone) {
    const path = `/clusters/${encodeURIComponent(name)}`;
    let plan;
    try {
      plan = await dryRun("DELETE", path);
    } catch (error) {
      status.textContent = errorText(error);
      return;
    }
    const was = found.failed.length ? found.failed.join(", ") : "the zone that had no capacity";
    const lines = [
      `First the failed cluster ${name} is deleted:`,
      ...planLines(plan),
      `Then ${name} is created again with the same settings in ${zone} (was ${was}).`,
    ];
    if (!(await confirmAction(`Create ${name} again in ${zone}?`, `Retry in ${zone}`, lines))) return;
    try {
      const deletion = await del(path);
      status.replaceChildren(`Deleting the failed cluster ${name}… `, operationLink(deletion.operation_id, "the deletion"));
      announce(`Deleting the failed cluster ${name}`);
      const gone = await finished(deletion.operation_id);
      if (gone.status !== "succeeded") {
        status.replaceChildren(`The deletion of ${name} ${gone.status}: `, operationLink(gone.id || deletion.operation_id, "see why"));
        return;
      }
      const created = await post("/clusters", inZone(op.request, found.failed, zone));
      announce(`Creating ${name} in ${zone}`);
      location.hash = `#/operations/${created.operation_id}`;
    } catch (error) {
      status.textContent = errorText(error);
    }
  }

  return h("div", { class: "zone-retry", role: "group", "aria-label": "Retry in another zone" },
    h("span", {}, `Offered in ${found.zones.join(", ")}: `),
    ...found.zones.slice(0, 3).map((zone) => h("button", {
      type: "button", class: "small", "data-zone": zone, onclick: () => retry(zone),
    }, `Retry in ${zone}`)),
    status);
}
