// A tool-calling agent on the openai Node SDK, as a TypeScript or JavaScript app would
// have it: the client made at import time (it reads OPENAI_BASE_URL and OPENAI_API_KEY,
// which the agentproxy helpers set before the test file is imported); the tool run by
// the agent itself; the final reply returned.
"use strict";

const { OpenAI } = require("openai");

const client = new OpenAI({ maxRetries: 0 });

const TOOLS = [
  {
    type: "function",
    function: {
      name: "get_weather",
      description: "Current weather in a city.",
      parameters: {
        type: "object",
        properties: { city: { type: "string" }, unit: { type: "string", enum: ["celsius", "fahrenheit"] } },
        required: ["city"],
      },
    },
  },
  {
    type: "function",
    function: {
      name: "get_time",
      description: "Local time in a city.",
      parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
    },
  },
];

function runTool(name, args) {
  const { city } = JSON.parse(args);
  if (name === "get_weather") {
    return JSON.stringify({ city, temp_c: city === "Paris" ? 18 : 20, sky: city === "Paris" ? "sunny" : "clear" });
  }
  return JSON.stringify({ city, time: "09:00" });
}

async function ask(question) {
  const messages = [
    { role: "system", content: "You are a concise weather assistant. Use the tools." },
    { role: "user", content: question },
  ];
  for (let turn = 0; turn < 5; turn++) {
    const response = await client.chat.completions.create({ model: "gpt-4o-mini", messages, tools: TOOLS });
    const message = response.choices[0].message;
    if (!message.tool_calls?.length) {
      return message.content;
    }
    messages.push(message);
    for (const call of message.tool_calls) {
      messages.push({ role: "tool", tool_call_id: call.id, content: runTool(call.function.name, call.function.arguments) });
    }
  }
  throw new Error("the model was still calling tools after 5 turns");
}

module.exports = { ask };
