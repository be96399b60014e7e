// The Vercel AI SDK against hermes serve. Usage: node ai_sdk.mjs '<json>'
//   provider: "compatible" (@ai-sdk/openai-compatible), "openai-chat" (@ai-sdk/openai .chat()),
//             "openai-responses" (@ai-sdk/openai Responses model)
//   scenario: "generate" | "stream" | "multi_turn" | "previous_response_id"
// No tools are given to the SDK: hermes runs its own. `isStepCount(5)` lets the SDK loop if
// it wrongly believes it has a tool call to answer; the pytest side counts upstream calls.
import { createOpenAI } from "@ai-sdk/openai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { generateText, isStepCount, streamText } from "ai";
import { config, report } from "./common.mjs";

const cfg = config();
const input = cfg.input ?? "hi";

function model() {
  if (cfg.provider === "compatible") {
    return createOpenAICompatible({ name: "hermes", baseURL: cfg.baseURL, apiKey: cfg.apiKey, includeUsage: true })(cfg.model);
  }
  const openai = createOpenAI({ baseURL: cfg.baseURL, apiKey: cfg.apiKey });
  if (cfg.provider === "openai-chat") return openai.chat(cfg.model);
  if (cfg.provider === "openai-responses") return openai.responses(cfg.model);
  throw new Error(`unknown provider ${cfg.provider}`);
}

const common = () => ({ model: model(), maxRetries: 0, stopWhen: isStepCount(5) });

// Calls the SDK would have to make itself (a server-run tool must never be one) and tools the
// provider reports as already executed (`providerExecuted`, hermes' `mcp_call` items).
const callsToMake = (steps) => steps.flatMap((s) => s.toolCalls.filter((c) => !c.providerExecuted).map((c) => c.toolName));
const serverTools = (steps) => steps.flatMap((s) => s.toolCalls.filter((c) => c.providerExecuted).map((c) => c.toolName));

function summary(result, extra = {}) {
  return {
    text: result.text,
    steps: result.steps.length,
    finishReason: result.finishReason,
    toolCalls: callsToMake(result.steps),
    serverTools: serverTools(result.steps),
    usage: result.totalUsage ?? result.usage ?? null,
    ...extra,
  };
}

async function generate() {
  const result = await generateText({ ...common(), prompt: input });
  return summary(result);
}

async function stream() {
  const errors = [];
  const result = streamText({ ...common(), prompt: input, onError: () => {} });
  let deltas = "";
  for await (const part of result.fullStream) {
    if (part.type === "text-delta") deltas += part.text ?? part.delta ?? "";
    if (part.type === "error") errors.push(String(part.error?.message ?? part.error));
  }
  const steps = await result.steps;
  return {
    deltas,
    text: await result.text,
    steps: steps.length,
    finishReason: await result.finishReason,
    toolCalls: callsToMake(steps),
    serverTools: serverTools(steps),
    usage: (await result.totalUsage) ?? null,
    errors,
  };
}

async function multiTurn() {
  const first = await generateText({ ...common(), prompt: "Capital of France?" });
  const messages = [{ role: "user", content: "Capital of France?" }, ...first.response.messages, { role: "user", content: "Population?" }];
  const second = await generateText({ ...common(), messages });
  return summary(second, { first: first.text });
}

// A tool turn, then a follow-up from the SDK's own messages (the Responses model sends the
// earlier output items back as `item_reference`s, the mcp_call included).
async function multiTurnTool() {
  const first = await generateText({ ...common(), prompt: input });
  const messages = [{ role: "user", content: input }, ...first.response.messages, { role: "user", content: "Thanks" }];
  const second = await generateText({ ...common(), messages });
  return summary(second, { first: first.text });
}

async function previousResponseId() {
  const first = await generateText({ ...common(), prompt: "What is 1+1?" });
  const id = first.providerMetadata?.openai?.responseId ?? first.response.id;
  const second = await generateText({
    ...common(),
    prompt: "Add one.",
    providerOptions: { openai: { previousResponseId: id } },
  });
  return summary(second, { first: first.text, firstId: id });
}

const scenarios = { generate, stream, multi_turn: multiTurn, multi_turn_tool: multiTurnTool, previous_response_id: previousResponseId };

await report(() => {
  const run = scenarios[cfg.scenario];
  if (!run) throw new Error(`unknown scenario ${cfg.scenario}`);
  return run();
});
