// Tests that run at once in one worker: each records and replays its own cassette, and
// sees its own trajectory.
import { expect, test } from "vitest";
import { agentproxy } from "agentproxy/vitest";
import agent from "../agent.js";

for (const city of ["Paris", "Tokyo", "Lima"]) {
  test.concurrent(`weather in ${city}`, async () => {
    const reply = await agent.ask(`What's the weather in ${city}?`);
    expect(reply).toContain(city);
    await expect(agentproxy).toHaveCalledTool("get_weather", { city });
    expect((await agentproxy.toolCalls()).map((c) => c.arguments.city)).toEqual([city]);
    expect((await agentproxy.requests()).length).toBe(2);
  });
}
