"use strict";
// jest's global teardown for agentproxy (the preset's): stops the serves of the setup.

module.exports = async function agentproxyGlobalTeardown() {
  await Promise.all((globalThis.__agentproxyServes ?? []).map((s) => s.stop()));
};
