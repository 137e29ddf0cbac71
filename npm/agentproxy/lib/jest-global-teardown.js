"use strict";
// jest's global teardown for agentproxy (the preset's): stops the serves of the setup,
// then writes the run's HTML report (AGENTPROXY_HTML) from what they wrote.

module.exports = async function agentproxyGlobalTeardown() {
  await Promise.all((globalThis.__agentproxyServes ?? []).map((s) => s.stop()));
  globalThis.__agentproxyReport?.render();
};
