import { describe, expect, test } from "vitest";
import { agentproxy } from "agentproxy/vitest";
import agent from "../agent.js";

describe("weather", () => {
  test("paris", async () => {
    const reply = await agent.ask(process.env.QUESTION ?? "What's the weather in Paris?");
    expect(reply).toBe("It is 18°C and sunny in Paris.");
    await expect(agentproxy).toHaveCalledTool("get_weather", { city: { regex: "^Par" } });
    await expect(agentproxy).not.toHaveCalledTool("get_time");
    await expect(agentproxy).toMeetExpectations({ calls: ["get_weather"], count: 1, requests: 2 });
    const requests = await agentproxy.requests();
    expect(requests.map((r) => r.route)).toEqual(["openai.chat", "openai.chat"]);
    expect(await agentproxy.reply()).toBe(reply);
  });

  test("tolerated", async () => {
    await agentproxy.tolerate({ holes: [{ name: "run", regex: "run-[0-9]+" }] });
    const reply = await agent.ask(`What's the weather in Paris? (${process.env.RUN_ID})`);
    expect(reply).toBe("It is 18°C and sunny in Paris.");
  });

  test("mocked", async () => {
    await agentproxy.mockTool("get_weather", { result: { city: "Oslo", temp_c: -5, sky: "snowy" } });
    expect(await agent.ask("What's the weather in Oslo?")).toBe("It is -5°C and snowy in Oslo.");
    const failures = await agentproxy.failures({ calls: [{ get_weather: { city: "Rome" } }] });
    expect(failures[0]).toContain("missing call: get_weather");
  });
});
