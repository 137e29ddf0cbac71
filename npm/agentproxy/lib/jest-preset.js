"use strict";
// The jest preset (`preset: "agentproxy"` resolves the package's jest-preset.js).
module.exports = {
  globalSetup: require.resolve("./jest-global-setup.js"),
  globalTeardown: require.resolve("./jest-global-teardown.js"),
  setupFilesAfterEnv: [require.resolve("./jest.js")],
};
