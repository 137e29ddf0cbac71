"use strict";
// Where the agentproxy binary is: AGENTPROXY_BIN, else the package of this platform, an
// optional dependency of this one (the layout esbuild and biome use).

const PLATFORMS = {
  "linux-x64": "@agentproxy/linux-x64",
  "linux-arm64": "@agentproxy/linux-arm64",
  "darwin-x64": "@agentproxy/darwin-x64",
  "darwin-arm64": "@agentproxy/darwin-arm64",
};

/** The path of the agentproxy binary to run. */
function binary(env = process.env) {
  if (env.AGENTPROXY_BIN) {
    return env.AGENTPROXY_BIN;
  }
  const platform = `${process.platform}-${process.arch}`;
  const name = PLATFORMS[platform];
  if (!name) {
    throw new Error(
      `no agentproxy binary is published for ${platform} (there are: ${Object.keys(PLATFORMS).join(", ")}); ` +
        "build one (cargo install agentproxy) and point AGENTPROXY_BIN at it",
    );
  }
  try {
    return require.resolve(`${name}/bin/agentproxy`);
  } catch {
    throw new Error(
      `the package ${name}, which carries the binary for ${platform}, is not installed: ` +
        "reinstall agentproxy without --omit=optional (or --no-optional), or point AGENTPROXY_BIN at a binary",
    );
  }
}

module.exports = { binary, PLATFORMS };
