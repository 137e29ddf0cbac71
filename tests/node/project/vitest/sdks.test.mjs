// The Vercel AI SDK (ai + @ai-sdk/openai: chat completions and the Responses API,
// streamed and not, each a tool loop) and the OpenAI Agents SDK for JS, through the
// vitest helper: their clients read OPENAI_BASE_URL, which the helper set.
import { describe, expect, test } from "vitest";
import { generateText, stepCountIs, streamText, tool } from "ai";
import { openai } from "@ai-sdk/openai";
import { Agent, run, tool as agentTool } from "@openai/agents";
import { z } from "zod";
import { agentproxy } from "agentproxy/vitest";

const weather = {
  description: "Current weather in a city.",
  execute: async ({ city }) => ({ city, temp_c: 18, sky: "sunny" }),
};
const tools = { get_weather: tool({ ...weather, inputSchema: z.object({ city: z.string() }) }) };
const prompt = "What's the weather in Paris?";

describe("ai sdk", () => {
  for (const [api, model] of [
    ["chat", () => openai.chat("gpt-4o-mini")],
    ["responses", () => openai.responses("gpt-4o-mini")],
  ]) {
    test(`${api} tool loop`, async () => {
      const { text } = await generateText({ model: model(), prompt, tools, stopWhen: stepCountIs(5) });
      expect(text).toContain("Paris");
      await expect(agentproxy).toHaveCalledTool("get_weather", { city: "Paris" });
    });

    test(`${api} streamed tool loop`, async () => {
      const result = streamText({ model: model(), prompt, tools, stopWhen: stepCountIs(5) });
      expect(await result.text).toContain("Paris");
      await expect(agentproxy).toMeetExpectations({ calls: [{ get_weather: { city: "Paris" } }], requests: 2 });
    });
  }
});

describe("openai agents", () => {
  test("tool loop", async () => {
    const getWeather = agentTool({
      name: "get_weather",
      description: weather.description,
      parameters: z.object({ city: z.string() }),
      execute: async (args) => JSON.stringify(await weather.execute(args)),
    });
    const agent = new Agent({
      name: "Weather",
      instructions: "You are a concise weather assistant. Use the tools.",
      tools: [getWeather],
      model: "gpt-4o-mini",
    });
    const result = await run(agent, prompt);
    expect(result.finalOutput).toContain("Paris");
    await expect(agentproxy).toHaveCalledTool("get_weather", { city: "Paris" });
  });
});
