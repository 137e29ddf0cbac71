"use strict";
// agentproxy's npm package: the binary (`npx agentproxy`, bin/agentproxy.js), and the
// pieces its vitest and jest helpers are made of, for other harnesses.

const { binary } = require("./binary.js");
const { Serve, AgentProxyError, PROTOCOL } = require("./serve.js");
const { cassetteDir } = require("./harness.js");

module.exports = { binary, Serve, AgentProxyError, PROTOCOL, cassetteDir };
