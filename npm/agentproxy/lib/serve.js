"use strict";
// One `agentproxy serve` process and its control endpoint (docs/pytest.md, "The control
// endpoint of agentproxy serve"): the protocol both the pytest plugin and these helpers
// speak.

const http = require("node:http");
const { spawn } = require("node:child_process");
const readline = require("node:readline");
const { binary } = require("./binary.js");

/** The control protocol version these helpers speak. */
const PROTOCOL = 4;
/** What every control request presents, and the variable serve gives it in. */
const SECRET_HEADER = "x-agentproxy-secret";
/** The header naming the test a request belongs to (percent-encoded), when several run. */
const TEST_HEADER = "x-agentproxy-test";
const SECRET_VAR = "AGENTPROXY_SECRET";
/** A control request waits this long at most: ending a test drains its exchanges. */
const CONTROL_TIMEOUT_MS = 120_000;

/** The proxy refused a control request, or did not answer it. */
class AgentProxyError extends Error {
  constructor(message) {
    super(message);
    this.name = "AgentProxyError";
  }
}

class Serve {
  /** Start `agentproxy serve ARGS` and wait for its listening line. */
  static async start(args, env = process.env) {
    const path = binary(env);
    const child = spawn(path, ["serve", ...args], {
      stdio: ["pipe", "pipe", "inherit"],
      env,
    });
    const failed = new Promise((_, reject) => {
      child.once("error", (e) => reject(new AgentProxyError(`cannot run ${path}: ${e.message}`)));
      child.once("exit", (code) =>
        reject(new AgentProxyError(`agentproxy serve exited with ${code} before listening`)),
      );
    });
    const lines = readline.createInterface({ input: child.stdout });
    const first = new Promise((resolve) => lines.once("line", resolve));
    const line = await Promise.race([first, failed]);
    lines.close();
    child.removeAllListeners("exit");
    const hello = JSON.parse(line);
    if (hello.protocol !== PROTOCOL) {
      child.stdin.end();
      const spoken = hello.protocol ? `version ${hello.protocol}` : "no version";
      throw new AgentProxyError(
        `${path} speaks control protocol ${spoken}; this package speaks version ${PROTOCOL}: ` +
          "install agentproxy and its binary from one release, or point AGENTPROXY_BIN at a binary of this release",
      );
    }
    // Serve must not keep the test runner alive: it ends when its stdin closes.
    child.unref();
    child.stdin.unref?.();
    child.stdout.unref?.();
    return new Serve(child, hello);
  }

  /** A serve another process started (jest's global setup), from its listening line. */
  static attach(hello) {
    return new Serve(null, hello);
  }

  constructor(child, hello) {
    this.child = child;
    this.url = hello.url;
    this.env = hello.env;
    this.mode = hello.mode;
    this.secret = hello.env[SECRET_VAR];
  }

  /** A control request: `METHOD /_agentproxy/PATH` with a JSON body, about the test
   * `test` when given; its JSON answer. */
  control(method, path, body, test) {
    const data = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const url = new URL(`/_agentproxy/${path}`, this.url);
    return new Promise((resolve, reject) => {
      const request = http.request(
        url,
        {
          method,
          // Straight to serve on loopback, whatever proxy the environment names.
          agent: false,
          timeout: CONTROL_TIMEOUT_MS,
          headers: {
            "content-type": "application/json",
            [SECRET_HEADER]: this.secret,
            ...(test ? { [TEST_HEADER]: encodeURIComponent(test) } : {}),
            ...(data ? { "content-length": data.length } : {}),
          },
        },
        (response) => {
          const chunks = [];
          response.on("data", (c) => chunks.push(c));
          response.on("end", () => {
            let answer;
            try {
              answer = JSON.parse(Buffer.concat(chunks).toString("utf8"));
            } catch (e) {
              return reject(new AgentProxyError(`${method} ${url.pathname}: not JSON: ${e.message}`));
            }
            if (response.statusCode >= 400) {
              return reject(new AgentProxyError(answer.error ?? `${method} ${url.pathname}: ${response.statusCode}`));
            }
            resolve(answer);
          });
        },
      );
      request.on("timeout", () => request.destroy(new Error(`no answer within ${CONTROL_TIMEOUT_MS} ms`)));
      request.on("error", (e) =>
        reject(new AgentProxyError(`agentproxy serve did not answer ${method} ${url.pathname}: ${e.message}`)),
      );
      request.end(data);
    });
  }

  /** Stop serve (one this process started): it writes what a test still active
   * recorded, then exits. */
  async stop() {
    if (!this.child || this.child.exitCode !== null || this.child.signalCode !== null) {
      return;
    }
    const exited = new Promise((resolve) => this.child.once("exit", resolve));
    this.child.stdin.end();
    await exited;
  }
}

module.exports = { Serve, AgentProxyError, PROTOCOL, TEST_HEADER };
