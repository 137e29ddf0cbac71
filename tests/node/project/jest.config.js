module.exports = {
  preset: "agentproxy",
  testEnvironment: "node",
  testMatch: ["**/jest/**/*.test.js"],
};
