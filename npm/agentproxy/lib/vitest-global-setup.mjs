// agentproxy's global setup for vitest (`test.globalSetup`), for the run's HTML report:
// with AGENTPROXY_HTML=FILE, every worker's serve writes each test into one directory,
// made here before the workers start, and the page is written from it when the run ends.
import harness from "./harness.js";

let report = null;

export function setup() {
  report = harness.htmlReport();
}

export function teardown() {
  report?.render();
}
