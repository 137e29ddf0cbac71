import { describe, expect, test } from "vitest";
import { agentproxy } from "agentproxy/vitest";
import { ask } from "./agent";

describe("weather agent", () => {
  test("asks for the weather in Paris", async () => {
    const reply = await ask("What's the weather in Paris?");
    expect(reply).toBe("It is 18°C and sunny in Paris.");
    await expect(agentproxy).toHaveCalledTool("get_weather", { city: "Paris" });
    await expect(agentproxy).toMeetExpectations({ calls: ["get_weather"], never: ["send_email"], requests: 2 });
  });

  test("tells the model what a mocked tool says", async () => {
    await agentproxy.mockTool("get_weather", { result: { city: "Oslo", temp_c: -5, sky: "snowy" } });
    expect(await ask("What's the weather in Oslo?")).toBe("It is -5°C and snowy in Oslo.");
  });
});
