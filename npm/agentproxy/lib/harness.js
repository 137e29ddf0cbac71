"use strict";
// What the vitest and jest helpers share: the session's mode, a cassette per test, the
// test's start and end at serve, and the `agentproxy` object a test asks about its
// trajectory (and the matchers over it). Each framework wires these into its own hooks.

const { spawnSync } = require("node:child_process");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { binary } = require("./binary.js");
const { Serve, AgentProxyError, PROTOCOL } = require("./serve.js");

const MODES = ["replay", "record", "auto", "update"];

/** `agentproxy serve`'s arguments for a session over `root`: the mode AGENTPROXY_MODE
 * asks, if any. Serve decides the session's mode (replay under CI, auto elsewhere, when
 * none is asked) and names it in its listening line; AGENTPROXY_MODE is this run's own
 * environment, so under CI it may choose a mode that records. */
function serveArgs(root, env = process.env) {
  const asked = (env.AGENTPROXY_MODE ?? "").trim();
  if (asked && !MODES.includes(asked)) {
    throw new AgentProxyError(`AGENTPROXY_MODE=${asked}: expected one of ${MODES.join(", ")}`);
  }
  return ["--root", root, ...(asked ? ["--mode", asked] : [])];
}

/**
 * The directory of the cassettes of the tests in `file`: `cassettes/<file name without its
 * extension>` next to the file, or under AGENTPROXY_CASSETTE_DIR (relative to `root`) in
 * the file's directory relative to `root`, so files of one name in two directories keep
 * apart (their tests may run in workers that cannot see each other). Serve names each
 * test's file in it after the test's full name.
 */
function cassetteDir(root, file, env = process.env) {
  const stem = path.basename(file).replace(/\.[^.]+$/, "");
  let dir = path.join(path.dirname(file), "cassettes");
  if (env.AGENTPROXY_CASSETTE_DIR) {
    const within = path.relative(root, path.dirname(file));
    const inside = !within.startsWith("..") && !path.isAbsolute(within);
    dir = path.join(path.resolve(root, env.AGENTPROXY_CASSETTE_DIR), inside ? within : "");
  }
  return path.join(dir, stem);
}

/** A `-t` pattern (a regular expression) that selects exactly the test `name`. */
function pattern(name) {
  return `^${name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`;
}

/** Every test's tolerances: AGENTPROXY_MATCH, a spec's `match:` block as JSON. */
function projectMatch(env = process.env) {
  const text = (env.AGENTPROXY_MATCH ?? "").trim();
  if (!text) {
    return null;
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new AgentProxyError(`AGENTPROXY_MATCH is not JSON: ${e.message}`);
  }
}

/** A word quoted for a POSIX shell. */
function shellQuote(word) {
  return /^[A-Za-z0-9_./=:@%+-]+$/.test(word) ? word : `'${word.replace(/'/g, "'\\''")}'`;
}

/** The tests of one session at serve: those running, and which test owns which cassette.
 * `runner`: the test runner (`vitest`, `jest`), told to serve so that its hints speak of
 * it; `concurrent`: tests may overlap (each request names its test); else one at a time. */
class Session {
  constructor(serve, mode, root, { runner, concurrent = false } = {}) {
    this.serve = serve;
    this.mode = mode;
    this.root = root;
    this.runner = runner;
    this.concurrent = concurrent;
    this.running = new Map();
  }

  /** Start a session over `root`: serve started, its variables put in `process.env`. */
  static async start(root, options, env = process.env) {
    const serve = await Serve.start(serveArgs(root, env), env);
    for (const [name, value] of Object.entries(serve.env)) {
      process.env[name] = value;
    }
    return new Session(serve, serve.mode, root, options);
  }

  /** Start the test `name` of `file`; `rerecord` is the command that records it again.
   * Its id, which names it to serve, is `FILE > NAME`. */
  async begin({ file, name, rerecord }) {
    const id = `${file} > ${name}`;
    if (this.running.has(id)) {
      throw new AgentProxyError(
        `two tests are named "${name}" in ${file} and run at once: give each a name of its own`,
      );
    }
    if (!this.concurrent && this.running.size > 0) {
      const [other] = this.running.keys();
      throw new AgentProxyError(
        `"${name}" started while "${other.split(" > ").slice(1).join(" > ")}" was still running: ` +
          "this runner's tests run one at a time through agentproxy (tests that run concurrently " +
          "in one file are supported under vitest only)",
      );
    }
    // Taken at once, before serve answers: a test that starts meanwhile sees it.
    this.running.set(id, null);
    try {
      const started = await this.serve.control("POST", "test", {
        protocol: PROTOCOL,
        name: id,
        // Serve names the file, and refuses a second test of the session on one.
        cassette_dir: cassetteDir(this.root, file),
        cassette_name: name,
        mode: this.mode,
        rerecord,
        match: projectMatch(),
        runner: this.runner,
      });
      const test = new Test(this.serve, id, started.cassette, started.mode);
      this.running.set(id, test);
      return test;
    } catch (e) {
      this.running.delete(id);
      throw e;
    }
  }

  /** The running test `id`, else the only one running. */
  test(id) {
    const test = id === undefined ? [...this.running.values()].find(Boolean) : this.running.get(id);
    if (!test || (id === undefined && this.running.size > 1)) {
      throw new AgentProxyError(
        id === undefined && this.running.size > 1
          ? "several tests are running: use `agentproxy` inside one of them"
          : "no agentproxy test is active: use `agentproxy` inside a test",
      );
    }
    return test;
  }

  /** End the test `name` of `file`, if it is running: what makes it fail (its misses'
   * near-miss reports, failed upstream requests, mocks that could not answer). */
  async end({ file, name }, failure) {
    const id = `${file} > ${name}`;
    if (!this.running.get(id)) {
      return [];
    }
    this.running.delete(id);
    const ended = await this.serve.control("DELETE", "test", { failure: failure ?? null }, id);
    const drift = ended.trajectory;
    if (drift && drift.verdict !== "identical") {
      // What the re-recording changed against the cassette it replaced, as
      // `agentproxy diff` prints it.
      const diff = drift.diff.trimEnd().split("\n").map((line) => `    ${line}`.trimEnd()).join("\n");
      const test = `${path.relative(process.cwd(), file)} > ${name}`;
      process.stderr.write(`agentproxy: ${test}: trajectory changed by re-recording (${drift.verdict}):\n${diff}\n`);
    }
    // The verdict is serve's: what fails the test besides its own code, to show.
    return ended.failures;
  }
}

/**
 * The hooks every test gets from a framework where `current(context)` names the test a
 * hook runs for (`{file, name}`: its file and full name), `command(file, name)` is the
 * command line that runs one test (without the mode), `errors(context)` gives the errors
 * the test has so far and `forget(context)` drops them: before, the test starts on its
 * cassette; after, it ends (telling serve why it failed in its own code, for the run's
 * report), failing with what went wrong (its misses' near-miss reports and how to record
 * it again, …).
 */
function hooks(session, current, command, { errors, forget }) {
  return {
    async before(context) {
      const { file, name } = current(context);
      const relative = path.relative(process.cwd(), file);
      const rerecord = ["AGENTPROXY_MODE=record", ...command(relative, name).map(shellQuote)].join(" ");
      await session.begin({ file, name, rerecord });
    },
    async after(context) {
      const failed = errors(context).map((e) => String(e?.message ?? e));
      const problems = await session.end(current(context), failed.length > 0 ? failed.join("\n") : null);
      if (problems.length > 0) {
        // A miss fails the test once, with its report: not also with what the SDK threw
        // about the error serve answered it with (as the pytest plugin does).
        forget(context);
        throw new Error(`agentproxy:\n${problems.join("\n")}`);
      }
    },
  };
}

/** One test at serve: its cassette and mode, and what its model traffic says so far. */
class Test {
  constructor(serve, id, cassette, mode) {
    this.serve = serve;
    this.id = id;
    this.cassette = cassette;
    this.mode = mode;
    this.mocks = {};
  }

  /** `{requests, calls, executions, reply}` so far. */
  trajectory() {
    return this.serve.control("GET", "test", undefined, this.id);
  }

  /** The tool calls the model asked for so far, each `{name, arguments}`; those to `name`. */
  async toolCalls(name) {
    const { calls } = await this.trajectory();
    return name === undefined ? calls : calls.filter((c) => c.name === name);
  }

  /** The requests answered so far, each `{method, path, route, body}`. */
  async requests() {
    return (await this.trajectory()).requests;
  }

  /** The tool calls MCP servers executed so far, each `{server, tool, arguments}`. */
  async executions() {
    return (await this.trajectory()).executions;
  }

  /** The last reply text, or null. */
  async reply() {
    return (await this.trajectory()).reply;
  }

  /** What fails of a spec's `expect:` block over the test so far, in the runner's words. */
  async failures(expect) {
    return (await this.serve.control("POST", "test/check", expect, this.id)).failures;
  }

  /** This test's tolerances (a spec's `match:` block: `ignore`, `holes`, `repeat`), over
   * AGENTPROXY_MATCH's. Before the agent's first model request. */
  async tolerate(match) {
    const project = projectMatch() ?? {};
    const merged = { ...project, ...match };
    for (const key of ["ignore", "holes"]) {
      if (project[key] || match[key]) {
        merged[key] = [...(project[key] ?? []), ...(match[key] ?? [])];
      }
    }
    await this.serve.control("PUT", "test/match", { match: merged }, this.id);
  }

  /** What the model is told `name` returned: `{result}`, `{results: [...]}`, or
   * `{when, result}` (several building rules in order), as a spec's `tools:`. */
  async mockTool(name, mock) {
    const { result, results, when } = mock ?? {};
    if ((result === undefined) === (results === undefined)) {
      throw new TypeError("mockTool needs exactly one of result or results");
    }
    let entry;
    if (results !== undefined) {
      if (when !== undefined) {
        throw new TypeError("results takes no when; give one mockTool per rule");
      }
      entry = { results };
    } else if (when === undefined && !(name in this.mocks)) {
      entry = { result };
    } else {
      const old = this.mocks[name] ?? {};
      let rules = old.rules ?? ("result" in old ? [{ when: null, result: old.result }] : []);
      const rule = { when: when ?? null, result };
      // A rule without `when` answers everything left: it goes last.
      rules = [...rules.filter((r) => r.when !== null), rule, ...rules.filter((r) => r.when === null)];
      entry = { rules };
    }
    this.mocks[name] = entry;
    await this.serve.control("PUT", "test/mocks", { mocks: this.mocks }, this.id);
  }
}

/** The matchers both frameworks get (`expect.extend`), over the `agentproxy` object. */
const matchers = {
  /** Some call to `name` has arguments matching `args` (a spec's `calls:` entry). */
  async toHaveCalledTool(received, name, args) {
    const call = { [name]: args ?? null };
    const failures = await received.failures({ calls: [call] });
    const shown = args === undefined ? name : `${name} ${JSON.stringify(args)}`;
    return {
      pass: failures.length === 0,
      message: () =>
        failures.length === 0 ? `expected no call ${shown}, but the model made one` : failures.join("\n"),
    };
  },
  /** A spec's whole `expect:` block holds over the test so far. */
  async toMeetExpectations(received, expect) {
    const failures = await received.failures(expect);
    return {
      pass: failures.length === 0,
      message: () =>
        failures.length === 0
          ? `expected these expectations to fail: ${JSON.stringify(expect)}`
          : failures.join("\n"),
    };
  },
};

/**
 * The `agentproxy` object tests import: the running test's cassette, mode, trajectory and
 * mocks, `test()` giving that test (it throws, saying so, outside a test).
 */
function facade(test) {
  return {
    get cassette() {
      return test().cassette;
    },
    get mode() {
      return test().mode;
    },
    trajectory: () => test().trajectory(),
    toolCalls: (name) => test().toolCalls(name),
    requests: () => test().requests(),
    executions: () => test().executions(),
    reply: () => test().reply(),
    failures: (expect) => test().failures(expect),
    mockTool: (name, mock) => test().mockTool(name, mock),
    tolerate: (match) => test().tolerate(match),
  };
}

/**
 * The run's HTML report, when AGENTPROXY_HTML names its file: a directory every serve of
 * the run writes each test into as it ends (they inherit AGENTPROXY_CASES_DIR, so it is
 * made in the runner's own process before any serve starts), rendered by `render()` once
 * every serve is done. `null` without AGENTPROXY_HTML.
 */
function htmlReport(env = process.env) {
  const page = env.AGENTPROXY_HTML;
  if (!page) {
    return null;
  }
  const cases = fs.mkdtempSync(path.join(os.tmpdir(), "agentproxy-cases-"));
  env.AGENTPROXY_CASES_DIR = cases;
  return {
    render() {
      const args = ["report", "cases", cases, "--report", "html", "-o", path.resolve(page)];
      const out = spawnSync(binary(env), args, { encoding: "utf8" });
      fs.rmSync(cases, { recursive: true, force: true });
      if (out.status !== 0) {
        process.stderr.write(`agentproxy: the HTML report ${page} was not written: ${out.stderr || out.error}\n`);
      }
    },
  };
}

module.exports = {
  AgentProxyError,
  Session,
  cassetteDir,
  facade,
  hooks,
  htmlReport,
  matchers,
  pattern,
  serveArgs,
};
