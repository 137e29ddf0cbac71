const { agentproxy } = require("agentproxy/jest");
const agent = require("../agent.js");

describe("weather", () => {
  test("paris", async () => {
    const reply = await agent.ask(process.env.QUESTION ?? "What's the weather in Paris?");
    expect(reply).toBe("It is 18°C and sunny in Paris.");
    await expect(agentproxy).toHaveCalledTool("get_weather", { city: "Paris" });
    await expect(agentproxy).not.toHaveCalledTool("get_time");
    await expect(agentproxy).toMeetExpectations({ calls: ["get_weather"], never: ["get_time"] });
    expect((await agentproxy.toolCalls()).map((c) => c.name)).toEqual(["get_weather"]);
  });
});
