"use strict";
// agentproxy for jest: `preset: "agentproxy"` in the jest config (or this file in
// `setupFilesAfterEnv` with the preset's global setup and teardown). Each test replays (or
// records) its own cassette through this worker's `agentproxy serve`; a miss fails the
// test with the near-miss report.
//
//   const { agentproxy } = require("agentproxy/jest");
//   test("paris", async () => {
//     await runAgent("What's the weather in Paris?");
//     await expect(agentproxy).toHaveCalledTool("get_weather", { city: "Paris" });
//   });

const { Serve } = require("./serve.js");
const { AgentProxyError, Session, facade, hooks, matchers, pattern } = require("./harness.js");

const setup = JSON.parse(process.env.AGENTPROXY_JEST ?? "null");
if (!setup) {
  throw new AgentProxyError(
    'agentproxy/jest needs its global setup: use `preset: "agentproxy"` in the jest config',
  );
}
const worker = Number(process.env.JEST_WORKER_ID ?? 1);
const hello = setup.serves[(worker - 1) % setup.serves.length];
// Before the test file imports its SDK clients.
for (const [name, value] of Object.entries(hello.env)) {
  process.env[name] = value;
}
const session = new Session(Serve.attach(hello), setup.mode, setup.root, { runner: "jest" });

expect.extend(matchers);

// The test a hook runs for (jest runs one test at a time per worker unless asked).
const current = () => {
  const { testPath, currentTestName } = expect.getState();
  return { file: testPath, name: currentTestName };
};
// The test running now as jest-circus has it, with its errors so far, seen from its events:
// every copy of jest-circus shares its handlers (what its `addEventHandler` adds to) under
// this symbol, so none is loaded for it here. Under another test runner a miss is also
// shown with what the SDK threw.
let running;
globalThis[Symbol.for("EVENT_HANDLERS")]?.push((event) => {
  if (event.name === "test_start") {
    running = event.test;
  }
});
const { before, after } = hooks(
  session,
  current,
  (file, name) => ["npx", "jest", file, "-t", pattern(name)],
  {
    // jest-circus keeps an error as [error, asyncError] or alone.
    errors: () => (running?.errors ?? []).map((e) => (Array.isArray(e) ? e[0] : e)),
    forget: () => running?.errors.splice(0),
  },
);
// Without parameters: jest would wait for a `done` callback.
beforeEach(() => before());
afterEach(() => after());

/** The running test's cassette, mode, trajectory and mocks. */
exports.agentproxy = facade(() => session.test());
