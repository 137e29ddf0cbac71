#!/usr/bin/env node
// The `agentproxy` command of the npm package: runs the binary of this platform's package
// (or AGENTPROXY_BIN) with the same arguments, passing signals on and exiting as it did.
"use strict";

const { spawn } = require("node:child_process");
const { binary } = require("../lib/binary.js");

let path;
try {
  path = binary();
} catch (e) {
  console.error(`agentproxy: ${e.message}`);
  process.exit(2);
}
const child = spawn(path, process.argv.slice(2), { stdio: "inherit" });
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(signal, () => child.kill(signal));
}
child.on("error", (e) => {
  console.error(`agentproxy: cannot run ${path}: ${e.message}`);
  process.exit(2);
});
child.on("exit", (code, signal) => {
  if (signal) {
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
  } else {
    process.exit(code ?? 1);
  }
});
