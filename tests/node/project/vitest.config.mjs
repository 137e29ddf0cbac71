export default {
  test: {
    setupFiles: ["agentproxy/vitest"],
    // The run's HTML report, under AGENTPROXY_HTML.
    globalSetup: ["agentproxy/vitest-global-setup"],
    include: ["vitest/**/*.test.mjs"],
  },
};
