export default {
  test: {
    setupFiles: ["agentproxy/vitest"],
    include: ["vitest/**/*.test.mjs"],
  },
};
