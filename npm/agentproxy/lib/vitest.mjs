// agentproxy for vitest: add "agentproxy/vitest" to `test.setupFiles`. One `agentproxy
// serve` per worker, started before the test files import their SDK clients; each test
// replays (or records) its own cassette; a miss fails the test with the near-miss report.
//
//   import { agentproxy } from "agentproxy/vitest";
//   test("paris", async () => {
//     await runAgent("What's the weather in Paris?");
//     await expect(agentproxy).toHaveCalledTool("get_weather", { city: "Paris" });
//   });
import path from "node:path";
import { afterEach, beforeEach, expect } from "vitest";
import harness from "./harness.js";

const { Session, facade, matchers, shellQuote } = harness;

// One session per worker process, whatever the number of test files it runs.
const KEY = Symbol.for("agentproxy.vitest.session");
globalThis[KEY] ??= await Session.start(process.cwd());
const session = globalThis[KEY];

expect.extend(matchers);

beforeEach(async () => {
  const { testPath, currentTestName } = expect.getState();
  const relative = path.relative(process.cwd(), testPath);
  const rerecord = ["AGENTPROXY_MODE=record", "npx", "vitest", "run", relative, "-t", currentTestName]
    .map((w, i) => (i === 0 ? w : shellQuote(w)))
    .join(" ");
  await session.begin({ file: testPath, name: currentTestName, rerecord });
});

afterEach(async () => {
  const problems = await session.end();
  if (problems.length > 0) {
    throw new Error(`agentproxy:\n${problems.join("\n")}`);
  }
});

/** The active test's cassette, mode, trajectory and mocks. */
export const agentproxy = facade(() => session);
