export default {
  test: {
    setupFiles: ["agentproxy/vitest"],
  },
};
