// The official TypeScript MCP SDK's client against the Hyperpilot MCP server, over stdio and over
// streamable HTTP: what a TypeScript agent host (an IDE, the MCP Inspector, an agent framework)
// sees. Run by tests/mcp/test_typescript_sdk.py, which starts the stack and the HTTP servers and
// asserts on the JSON this prints; every step is recorded, a thrown error included, so a failure
// shows what the SDK did (e.g. -32602 "Structured content does not match the tool's output
// schema") instead of stopping the run.
//
//   node conformance.mjs <config.json>
//
// config: {python, env, cluster, instance_type, unknown_cluster,
//          http: {read_only: {url, token}, writable: {url, token}}}

import { readFileSync } from "node:fs";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const config = JSON.parse(readFileSync(process.argv[2], "utf8"));

function textOf(result) {
  return (result.content ?? [])
    .filter((block) => block.type === "text")
    .map((block) => block.text)
    .join("\n");
}

function thrown(error) {
  return { thrown: String(error?.message ?? error), code: error?.code ?? null };
}

// One tool call as a client sees it: the result (isError, text, structured content), or what the
// SDK threw.
async function call(client, name, args, options = {}) {
  try {
    const result = await client.callTool({ name, arguments: args }, undefined, options);
    return {
      isError: result.isError === true,
      text: textOf(result),
      structuredContent: result.structuredContent ?? null,
    };
  } catch (error) {
    return thrown(error);
  }
}

async function connect(transport) {
  const client = new Client({ name: "hyperpilot-ts-conformance", version: "1.0.0" });
  await client.connect(transport);
  return client;
}

function stdio(allowWrite) {
  return new StdioClientTransport({
    command: config.python,
    args: ["-m", "mcp_svc", ...(allowWrite ? ["--allow-write"] : [])],
    env: { ...config.env, MCP_ALLOW_WRITE: "false" },
    cwd: config.cwd,
    stderr: "inherit",
  });
}

function http(server) {
  const headers = server.token ? { Authorization: `Bearer ${server.token}` } : {};
  return new StreamableHTTPClientTransport(new URL(server.url), { requestInit: { headers } });
}

// Writes off: list, read, a refused write, an unknown cluster, bad arguments.
async function readOnly(transport) {
  const out = {};
  const client = await connect(transport);
  try {
    const { tools } = await client.listTools();
    out.tools = tools.map((t) => ({
      name: t.name,
      readOnly: t.annotations?.readOnlyHint ?? null,
      hasOutputSchema: Boolean(t.outputSchema),
    }));
    out.read = await call(client, "list_clusters", {});
    out.write_refused = await call(client, "create_storage_bucket", { name: "ts-refused" });
    out.unknown_cluster = await call(client, "get_cluster", { name: config.unknown_cluster });
    // Refused by the tool's own schema, before any request.
    out.bad_argument = await call(client, "list_instance_types", {
      availability_zone_id: "not a zone",
    });
    // Refused by the gateway: REST names the field query.selector.
    out.bad_selector = await call(client, "list_pods", {
      cluster: config.cluster,
      selector: "app in (",
    });
  } finally {
    await client.close();
  }
  return out;
}

// Writes on: an allowed write, then its operation waited on with a progressToken.
async function writable(transport, group) {
  const out = {};
  const client = await connect(transport);
  try {
    out.write = await call(client, "add_instance_group", {
      cluster: config.cluster,
      group: { name: group, instance_type: config.instance_type, count: 1 },
    });
    const operationId = out.write.structuredContent?.operation_id;
    out.progress = [];
    out.polls = [];
    if (operationId) {
      for (let i = 0; i < 6; i++) {
        const poll = await call(
          client,
          "get_operation",
          { operation_id: operationId, wait_seconds: 45 },
          {
            // Sets _meta.progressToken on the request.
            onprogress: (p) =>
              out.progress.push({ progress: p.progress, total: p.total ?? null, message: p.message ?? null }),
            resetTimeoutOnProgress: true,
          },
        );
        out.polls.push({
          isError: poll.isError ?? null,
          thrown: poll.thrown ?? null,
          status: poll.structuredContent?.status ?? null,
          terminal: poll.structuredContent?.terminal ?? null,
        });
        if (poll.thrown || poll.isError || poll.structuredContent?.terminal) break;
      }
    }
  } finally {
    await client.close();
  }
  return out;
}

// Without the token: what the SDK's client reports, and what the 401 says.
async function unauthorized(server) {
  const out = {};
  try {
    const client = await connect(http({ url: server.url }));
    await client.close();
    out.connected = true;
  } catch (error) {
    out.connected = false;
    Object.assign(out, thrown(error));
  }
  const answer = await fetch(server.url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
  });
  out.status = answer.status;
  out.wwwAuthenticate = answer.headers.get("www-authenticate");
  out.body = await answer.text();
  return out;
}

async function step(fn) {
  try {
    return await fn();
  } catch (error) {
    return thrown(error);
  }
}

const results = {
  stdio: {
    read_only: await step(() => readOnly(stdio(false))),
    writable: await step(() => writable(stdio(true), "ts-stdio")),
  },
  http: {
    read_only: await step(() => readOnly(http(config.http.read_only))),
    writable: await step(() => writable(http(config.http.writable), "ts-http")),
    unauthorized: await step(() => unauthorized(config.http.read_only)),
  },
};
process.stdout.write(JSON.stringify(results, null, 1) + "\n");
