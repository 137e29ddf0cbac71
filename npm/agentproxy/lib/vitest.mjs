// agentproxy for vitest: add "agentproxy/vitest" to `test.setupFiles`. One `agentproxy
// serve` per worker, started before the test files import their SDK clients; each test
// replays (or records) its own cassette; a miss fails the test with the near-miss report.
//
//   import { agentproxy } from "agentproxy/vitest";
//   test("paris", async () => {
//     await runAgent("What's the weather in Paris?");
//     await expect(agentproxy).toHaveCalledTool("get_weather", { city: "Paris" });
//   });
import { afterEach, beforeEach, expect } from "vitest";
import harness from "./harness.js";

const { Session, facade, hooks, matchers, pattern } = harness;

// One session per worker process, whatever the number of test files it runs.
const KEY = Symbol.for("agentproxy.vitest.session");
globalThis[KEY] ??= await Session.start(process.cwd());
const session = globalThis[KEY];

expect.extend(matchers);

// The test a hook runs for, from its own context (tests may overlap: test.concurrent).
const current = ({ task }) => {
  const names = [task.name];
  for (let suite = task.suite; suite && !suite.filepath; suite = suite.suite) {
    names.unshift(suite.name);
  }
  return { file: task.file.filepath, name: names.join(" > ") };
};
const { before, after } = hooks(session, current, (file, name) => ["npx", "vitest", "run", file, "-t", pattern(name)]);
beforeEach(before);
afterEach(after);

/** The active test's cassette, mode, trajectory and mocks. */
export const agentproxy = facade(() => session);
