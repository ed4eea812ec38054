// The second, independent client of `codaris acp`: the TypeScript SDK's v1 client, driving the
// real binary over stdio as an editor does. tests/e2e/acp_node.rs runs it against a daemon
// playing a script and checks the summary it prints (one JSON line on standard output).
//
// usage: node client.mjs CODARIS SCRIPT PROJECT MCP_SERVER
// (MCP_SERVER: a stdio MCP server program, given to the session as the editor's server `ed`)
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import { client, methods, ndJsonStream } from "@agentclientprotocol/sdk";

const [codaris, script, project, mcpServer] = process.argv.slice(2);
const mcpServers = [{ name: "ed", command: mcpServer, args: [], env: [] }];
const agent = spawn(codaris, ["acp", "--script", script], { stdio: ["pipe", "pipe", "inherit"] });
const updates = [];
const cards = [];

const sleepingPid = async () => {
  const file = join(project, "sleep.pid");
  for (let i = 0; i < 600; i++) {
    if (existsSync(file)) {
      const pid = Number(readFileSync(file, "utf8").trim());
      if (pid > 0) return pid;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error("the command never started");
};

const summary = await client({ name: "codaris-node" })
  .onNotification(methods.client.session.update, ({ params }) => {
    updates.push(params.update);
  })
  .onRequest(methods.client.session.requestPermission, ({ params }) => {
    cards.push(params.options.map((o) => o.kind));
    // By kind, never by position.
    const once = params.options.find((o) => o.kind === "allow_once");
    return once
      ? { outcome: { outcome: "selected", optionId: once.optionId } }
      : { outcome: { outcome: "cancelled" } };
  })
  .connectWith(
    ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(agent.stdout)),
    async (cx) => {
      const init = await cx.request(methods.agent.initialize, {
        protocolVersion: 1,
        clientCapabilities: {},
        clientInfo: { name: "codaris-node", version: "1.0" },
      });
      const session = await cx.request(methods.agent.session.new, { cwd: project, mcpServers });
      const id = session.sessionId;
      const first = await cx.request(methods.agent.session.prompt, {
        sessionId: id,
        prompt: [{ type: "text", text: "read and rename" }],
      });
      const long = cx.request(methods.agent.session.prompt, {
        sessionId: id,
        prompt: [{ type: "text", text: "sleep" }],
      });
      const pid = await sleepingPid();
      await cx.notify(methods.agent.session.cancel, { sessionId: id });
      const cancelled = await long;
      await cx.request(methods.agent.session.setMode, { sessionId: id, modeId: "plan" });
      const refused = await cx.request(methods.agent.session.prompt, {
        sessionId: id,
        prompt: [{ type: "text", text: "write a file" }],
      });
      await cx.request(methods.agent.session.load, { sessionId: id, cwd: project, mcpServers });
      return {
        agent: init.agentInfo?.name,
        mcp_http: init.agentCapabilities?.mcpCapabilities?.http,
        modes: session.modes?.availableModes.map((m) => m.id),
        stops: [first.stopReason, cancelled.stopReason, refused.stopReason],
        pid,
      };
    },
  );

agent.stdin.end();
const byKind = (kind) => updates.filter((u) => u.sessionUpdate === kind);
const edit = byKind("tool_call").find((c) => c.kind === "edit");
const write = byKind("tool_call").find((c) => c.rawInput?.path === "new.txt");
const end = (call, status) =>
  byKind("tool_call_update").find((u) => u.toolCallId === call?.toolCallId && u.status === status);
console.log(
  JSON.stringify({
    ...summary,
    cards,
    text: byKind("agent_message_chunk")[0]?.content?.text,
    edit_diff: end(edit, "completed")?.content?.[0],
    plan: byKind("plan")[0]?.entries?.map((e) => e.status),
    write_failed: end(write, "failed")?.content?.[0]?.content?.text,
    mode: byKind("current_mode_update")[0]?.currentModeId,
    replayed: byKind("user_message_chunk")[0]?.content?.text,
  }),
);
