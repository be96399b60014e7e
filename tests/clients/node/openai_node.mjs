// The official `openai` Node SDK against hermes serve. Usage: node openai_node.mjs '<json>'
import OpenAI from "openai";
import { config, report } from "./common.mjs";

const cfg = config();
const client = new OpenAI({ baseURL: cfg.baseURL, apiKey: cfg.apiKey, maxRetries: 0, timeout: 30000 });
const input = cfg.input ?? "hi";

async function responsesStream() {
  const deltas = [];
  const stream = client.responses.stream({ model: cfg.model, input });
  for await (const event of stream) {
    if (event.type === "response.output_text.delta") deltas.push(event.delta);
  }
  const final = await stream.finalResponse();
  return { deltas: deltas.join(""), text: final.output_text, status: final.status, usage: final.usage ?? null };
}

async function chatStream() {
  const deltas = [];
  const stream = client.chat.completions.stream({
    model: cfg.model,
    messages: [{ role: "user", content: input }],
    stream_options: { include_usage: true },
  });
  stream.on("content", (delta) => deltas.push(delta));
  const final = await stream.finalChatCompletion();
  const choice = final.choices[0];
  return {
    deltas: deltas.join(""),
    text: choice.message.content,
    toolCalls: choice.message.tool_calls ?? [],
    finishReason: choice.finish_reason,
    usage: final.usage ?? null,
  };
}

async function responsesCreate() {
  const resp = await client.responses.create({ model: cfg.model, input });
  return { text: resp.output_text, status: resp.status, usage: resp.usage ?? null };
}

async function chatCreate() {
  const c = await client.chat.completions.create({ model: cfg.model, messages: [{ role: "user", content: input }] });
  return { text: c.choices[0].message.content, usage: c.usage ?? null };
}

async function previousResponseId() {
  const first = await client.responses.create({ model: cfg.model, input: "What is 1+1?" });
  const second = await client.responses.create({ model: cfg.model, input: "Add one.", previous_response_id: first.id });
  return { first: first.output_text, text: second.output_text };
}

async function wrongKey() {
  const bad = new OpenAI({ baseURL: cfg.baseURL, apiKey: "sk-wrong", maxRetries: 0, timeout: 30000 });
  await bad.responses.create({ model: cfg.model, input });
  return { text: "unexpected success" };
}

const scenarios = {
  responses_stream: responsesStream,
  chat_stream: chatStream,
  responses_create: responsesCreate,
  chat_create: chatCreate,
  previous_response_id: previousResponseId,
  wrong_key: wrongKey,
};

await report(() => {
  const run = scenarios[cfg.scenario];
  if (!run) throw new Error(`unknown scenario ${cfg.scenario}`);
  return run();
});
