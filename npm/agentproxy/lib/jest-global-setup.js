"use strict";
// jest's global setup for agentproxy (the preset's): one `agentproxy serve` per worker,
// started in jest's own process before any worker, each worker told its own through
// the environment (lib/jest.js picks it by JEST_WORKER_ID).

const { Serve, PROTOCOL } = require("./serve.js");
const { htmlReport, serveArgs } = require("./harness.js");

module.exports = async function agentproxyGlobalSetup(globalConfig) {
  const root = globalConfig.rootDir;
  const workers = Math.max(1, globalConfig.maxWorkers || 1);
  // Before the serves start: they write the report's cases (AGENTPROXY_HTML).
  globalThis.__agentproxyReport = htmlReport();
  const serves = await Promise.all(
    Array.from({ length: workers }, () => Serve.start(serveArgs(root))),
  );
  globalThis.__agentproxyServes = serves;
  process.env.AGENTPROXY_JEST = JSON.stringify({
    mode: serves[0].mode,
    root,
    serves: serves.map((s) => ({ url: s.url, env: s.env, protocol: PROTOCOL })),
  });
};
