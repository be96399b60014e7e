// One ACP turn against `hermes acp`, driven by the ACP TypeScript SDK's client side.
//
//   node drive_hermes.mjs CWD PROMPT -- COMMAND ARGS...
//
// The client advertises terminals and runs `terminal/create` commands itself (bash -c);
// it allows every permission once. It prints one JSON line: the initialize response,
// the session id, every session update and the prompt's stop reason.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { client, methods, ndJsonStream } from "@agentclientprotocol/sdk";

const [cwd, prompt, separator, command, ...args] = process.argv.slice(2);
if (separator !== "--" || !command) {
  console.error("usage: node drive_hermes.mjs CWD PROMPT -- COMMAND ARGS...");
  process.exit(2);
}

const agent = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] });
const stream = ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(agent.stdout));

const terminals = new Map();
let nextTerminal = 1;
const updates = [];
const terminalCommands = [];

const app = client({ name: "hermes-node-test" })
  .onNotification(methods.client.session.update, ({ params }) => {
    updates.push(params.update);
  })
  .onRequest(methods.client.session.requestPermission, ({ params }) => ({
    outcome: { outcome: "selected", optionId: params.options.find((o) => o.kind === "allow_once").optionId },
  }))
  .onRequest(methods.client.terminal.create, ({ params }) => {
    const id = `term-${nextTerminal++}`;
    terminalCommands.push([params.command, ...(params.args ?? [])]);
    const child = spawn(params.command, params.args ?? [], { cwd: params.cwd ?? cwd });
    const entry = { output: "", exit: null };
    entry.done = new Promise((resolve) => {
      child.on("close", (code, signal) => {
        entry.exit = { exitCode: code, signal };
        resolve();
      });
    });
    child.stdout.on("data", (data) => (entry.output += data));
    child.stderr.on("data", (data) => (entry.output += data));
    entry.child = child;
    terminals.set(id, entry);
    return { terminalId: id };
  })
  .onRequest(methods.client.terminal.waitForExit, async ({ params }) => {
    const entry = terminals.get(params.terminalId);
    await entry.done;
    return entry.exit;
  })
  .onRequest(methods.client.terminal.output, ({ params }) => {
    const entry = terminals.get(params.terminalId);
    return { output: entry.output, truncated: false, exitStatus: entry.exit };
  })
  .onRequest(methods.client.terminal.kill, ({ params }) => {
    terminals.get(params.terminalId).child.kill();
    return {};
  })
  .onRequest(methods.client.terminal.release, ({ params }) => {
    terminals.delete(params.terminalId);
    return {};
  });

const result = await app.connectWith(stream, async (ctx) => {
  const init = await ctx.request(methods.agent.initialize, {
    protocolVersion: 1,
    clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: true },
    clientInfo: { name: "hermes-node-test", version: "1.0.0" },
  });
  const session = await ctx.request(methods.agent.session.new, { cwd, mcpServers: [] });
  const response = await ctx.request(methods.agent.session.prompt, {
    sessionId: session.sessionId,
    prompt: [{ type: "text", text: prompt }],
  });
  return { init, sessionId: session.sessionId, stopReason: response.stopReason };
});
agent.stdin.end();
await new Promise((resolve) => agent.on("close", resolve));
process.stdout.write(JSON.stringify({ ...result, updates, terminalCommands }) + "\n");
