// A small tool-calling agent on the openai Node SDK: the user asks for the weather, the
// model calls get_weather, the agent runs the tool and sends the result back, the model
// answers. The client is made at import time and reads OPENAI_BASE_URL and
// OPENAI_API_KEY, as most apps' clients do: the agentproxy helper sets both before the
// test file imports this module.
import OpenAI from "openai";
import type { ChatCompletionMessageParam, ChatCompletionTool } from "openai/resources/chat/completions";

const client = new OpenAI({ maxRetries: 0 });

const tools: ChatCompletionTool[] = [
  {
    type: "function",
    function: {
      name: "get_weather",
      description: "Current weather in a city.",
      parameters: {
        type: "object",
        properties: { city: { type: "string" } },
        required: ["city"],
      },
    },
  },
];

/** The weather tool: deterministic, so a replay sends what the recording sent. */
function getWeather(city: string): string {
  return JSON.stringify({ city, temp_c: city === "Paris" ? 18 : 20, sky: city === "Paris" ? "sunny" : "clear" });
}

export async function ask(question: string): Promise<string | null> {
  const messages: ChatCompletionMessageParam[] = [
    { role: "system", content: "You are a concise weather assistant. Use the tools." },
    { role: "user", content: question },
  ];
  for (let turn = 0; turn < 5; turn++) {
    const response = await client.chat.completions.create({ model: "gpt-4o-mini", messages, tools });
    const message = response.choices[0].message;
    if (!message.tool_calls?.length) {
      return message.content;
    }
    messages.push(message);
    for (const call of message.tool_calls) {
      if (call.type !== "function") continue;
      const { city } = JSON.parse(call.function.arguments) as { city: string };
      messages.push({ role: "tool", tool_call_id: call.id, content: getWeather(city) });
    }
  }
  throw new Error("the model was still calling tools after 5 turns");
}
