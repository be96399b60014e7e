// Drive one Node client against responses_stub.py; prints one JSON line.
//   node probe_node.mjs CLIENT VARIANT MODE BASE_URL
//   CLIENT: openai | ai-sdk      MODE: json | stream | followup
// Run from tests/clients/node (its node_modules): node ../research/probe_node.mjs …
import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(path.resolve("package.json"));
const load = async (name) => import(require.resolve(name));
const [client, variant, mode, baseURL] = process.argv.slice(2);
const apiKey = "sk-stub";

async function runOpenAI() {
  const OpenAI = (await load("openai")).default;
  const c = new OpenAI({ baseURL, apiKey, maxRetries: 0 });
  if (mode === "stream") {
    const stream = c.responses.stream({ model: variant, input: "run echo hi" });
    for await (const _ of stream) { /* drain */ }
    const final = await stream.finalResponse();
    return { text: final.output_text, items: final.output.map((i) => i.type) };
  }
  const first = await c.responses.create({ model: variant, input: "run echo hi" });
  if (mode === "json") return { text: first.output_text, items: first.output.map((i) => i.type) };
  const second = await c.responses.create({
    model: variant,
    input: [{ role: "user", content: "run echo hi" }, ...first.output, { role: "user", content: "thanks" }],
  });
  return { text: second.output_text };
}

async function runAiSdk() {
  const { createOpenAI } = await load("@ai-sdk/openai");
  const { generateText, streamText, isStepCount } = await load("ai");
  const model = createOpenAI({ baseURL, apiKey }).responses(variant);
  const common = { model, maxRetries: 0, stopWhen: isStepCount(5) };
  const calls = (steps) => steps.flatMap((s) => s.content.filter((p) => p.type === "tool-call" || p.type === "tool-result")
    .map((p) => `${p.type}:${p.toolName}${p.providerExecuted ? "(providerExecuted)" : ""}`));
  if (mode === "stream") {
    const errors = [];
    const r = streamText({ ...common, prompt: "run echo hi", onError: ({ error }) => errors.push(String(error?.message ?? error)) });
    for await (const part of r.fullStream) if (part.type === "error") errors.push(String(part.error?.message ?? part.error));
    const steps = await r.steps;
    return { text: await r.text, steps: steps.length, parts: calls(steps), errors };
  }
  const first = await generateText({ ...common, prompt: "run echo hi" });
  if (mode === "json") return { text: first.text, steps: first.steps.length, parts: calls(first.steps) };
  const second = await generateText({
    ...common,
    messages: [{ role: "user", content: "run echo hi" }, ...first.response.messages, { role: "user", content: "thanks" }],
  });
  return { text: second.text, steps: second.steps.length };
}

let out;
try {
  out = { ok: true, ...(await (client === "openai" ? runOpenAI() : runAiSdk())) };
} catch (err) {
  out = { ok: false, error: `${err?.constructor?.name ?? "Error"}: ${String(err?.message ?? err).slice(0, 300)}` };
}
console.log(JSON.stringify(out));
