// agentproxy for vitest: add "agentproxy/vitest" to `test.setupFiles`. One `agentproxy
// serve` per worker, started before the test files import their SDK clients; each test
// replays (or records) its own cassette; a miss fails the test with the near-miss report.
// Tests that run concurrently (test.concurrent) each get their own: every request a
// test's fetch sends to serve names the test (x-agentproxy-test), which the test's own
// async context tells.
//
//   import { agentproxy } from "agentproxy/vitest";
//   test("paris", async () => {
//     await runAgent("What's the weather in Paris?");
//     await expect(agentproxy).toHaveCalledTool("get_weather", { city: "Paris" });
//   });
import { AsyncLocalStorage } from "node:async_hooks";
import { afterEach, beforeEach, expect } from "vitest";
import harness from "./harness.js";
import serve from "./serve.js";

const { Session, facade, hooks, matchers, pattern } = harness;

// One session per worker process, whatever the number of test files it runs.
const KEY = Symbol.for("agentproxy.vitest");
globalThis[KEY] ??= await setup();
const { session, tests } = globalThis[KEY];

/** The worker's session, and fetch wrapped to name the running test to serve. */
async function setup() {
  const session = await Session.start(process.cwd(), { runner: "vitest", concurrent: true });
  const tests = new AsyncLocalStorage();
  const fetch = globalThis.fetch;
  const origin = new URL(session.serve.url).origin;
  const toServe = (input) => {
    try {
      return new URL(typeof input === "object" && "url" in input ? input.url : String(input)).origin === origin;
    } catch {
      return false;
    }
  };
  globalThis.fetch = function agentproxyFetch(input, init) {
    const id = tests.getStore();
    if (id === undefined || !toServe(input)) {
      return fetch(input, init);
    }
    // The request as fetch would make it, with its test named.
    const streamed = init?.body != null && typeof init.body !== "string" && !(init.body instanceof URLSearchParams);
    const request = new Request(input, streamed ? { ...init, duplex: "half" } : init);
    request.headers.set(serve.TEST_HEADER, encodeURIComponent(id));
    return fetch(request);
  };
  return { session, tests };
}

expect.extend(matchers);

// The test a hook runs for, from its own context (tests may overlap: test.concurrent).
const current = ({ task }) => {
  const names = [task.name];
  for (let suite = task.suite; suite && !suite.filepath; suite = suite.suite) {
    names.unshift(suite.name);
  }
  return { file: task.file.filepath, name: names.join(" > ") };
};
// Where each test's errors of its current run start: a retried test keeps those of its
// earlier runs.
const starts = new WeakMap();
const { before, after } = hooks(
  session,
  current,
  (file, name) => ["npx", "vitest", "run", file, "-t", pattern(name)],
  {
    errors: ({ task }) => task.result?.errors?.slice(starts.get(task)) ?? [],
    forget: ({ task }) => task.result?.errors?.splice(starts.get(task)),
  },
);

beforeEach(async (context) => {
  const { file, name } = current(context);
  // The test's own async context: its body and its requests run in it.
  tests.enterWith(`${file} > ${name}`);
  starts.set(context.task, context.task.result?.errors?.length ?? 0);
  await before(context);
});
afterEach(after);

/** The running test's cassette, mode, trajectory and mocks. */
export const agentproxy = facade(() => session.test(tests.getStore()));
