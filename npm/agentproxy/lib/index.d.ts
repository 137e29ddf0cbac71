/** A tool call the model asked for. */
export interface ToolCall {
  name: string;
  arguments: Record<string, unknown>;
}

/** A request the proxy answered, as the cassette stores it (secrets redacted). */
export interface AnsweredRequest {
  method: string;
  path: string;
  /** `openai.chat`, `anthropic.messages`, …, `mcp` or `http`. */
  route: string;
  body: unknown;
}

/** A tool call an MCP server executed. */
export interface Execution {
  server: string;
  tool: string;
  arguments: Record<string, unknown>;
}

/** What a test's model traffic says so far. */
export interface Trajectory {
  requests: AnsweredRequest[];
  calls: ToolCall[];
  executions: Execution[];
  reply: string | null;
}

/** A call in a spec's grammar: a tool name, or `{ tool: arguments }` (bare values match
 * partially; matchers such as `{ regex: "…" }` stand for a value). */
export type CallExpectation = string | Record<string, Record<string, unknown> | null>;

/** A spec's `expect:` block (docs/spec-reference.md), as `agentproxy test` reads it. */
export interface Expectations {
  calls?: CallExpectation[];
  order?: "subsequence" | "exact" | "unordered";
  strict?: boolean;
  allow?: string[];
  never?: CallExpectation[];
  executed?: CallExpectation[];
  not_executed?: CallExpectation[];
  count?: number | { min?: number; max?: number };
  requests?: number | { min?: number; max?: number };
  reply?: unknown;
}

/** A spec's `match:` block: what differences between a request and its recording do
 * not matter. */
export interface MatchRules {
  ignore?: string[];
  holes?: { name: string; regex: string; in?: string }[];
  repeat?: "none" | "last";
}

/** What the model is told a tool returned, as a spec's `tools:`. */
export type ToolMock =
  | { result: unknown; when?: Record<string, unknown> }
  | { results: unknown[] };

/** The active test, as a test sees it. */
export interface AgentProxy {
  /** The test's cassette. */
  readonly cassette: string;
  /** What the test does with it: `replay`, `record` or `update`. */
  readonly mode: "replay" | "record" | "update";
  trajectory(): Promise<Trajectory>;
  /** The tool calls so far; only those to `name` when given. */
  toolCalls(name?: string): Promise<ToolCall[]>;
  requests(): Promise<AnsweredRequest[]>;
  executions(): Promise<Execution[]>;
  reply(): Promise<string | null>;
  /** What fails of `expect` over the test so far, in the runner's words. */
  failures(expect: Expectations): Promise<string[]>;
  /** Before the agent's first model request. */
  mockTool(name: string, mock: ToolMock): Promise<void>;
  /** This test's tolerances, a spec's `match:` block (added to AGENTPROXY_MATCH's).
   * Before the agent's first model request. */
  tolerate(match: MatchRules): Promise<void>;
}

/** The matchers the helpers add to `expect`. Await them. */
export interface AgentProxyMatchers<R = unknown> {
  /** Some call to `name` has arguments matching `args` (a spec's `calls:` entry). */
  toHaveCalledTool(name: string, args?: Record<string, unknown>): Promise<R>;
  /** A spec's whole `expect:` block holds over the test so far. */
  toMeetExpectations(expect: Expectations): Promise<R>;
}

/** The agentproxy binary this package runs (AGENTPROXY_BIN, else its platform's). */
export declare function binary(): string;

/** The control protocol version this package speaks. */
export declare const PROTOCOL: number;

export declare class AgentProxyError extends Error {}

/** One `agentproxy serve` and its control endpoint (docs/pytest.md, "The control
 * endpoint of agentproxy serve"). */
export declare class Serve {
  /** Start `agentproxy serve ARGS` and wait for its listening line. */
  static start(args: string[], env?: Record<string, string | undefined>): Promise<Serve>;
  /** `http://127.0.0.1:PORT`. */
  readonly url: string;
  /** The variables a program needs to reach it. */
  readonly env: Record<string, string>;
  /** The session's mode, as serve decided it (`--mode`, else replay under CI and auto
   * elsewhere): a test starts in it unless it asks for another. */
  readonly mode: "replay" | "record" | "auto" | "update";
  /** `METHOD /_agentproxy/PATH` with a JSON body, about the test `test` (its name) when
   * several run: its JSON answer. */
  control(method: string, path: string, body?: unknown, test?: string): Promise<any>;
  /** Stop it; it writes what a test still active recorded. */
  stop(): Promise<void>;
}

/** The directory of the cassettes of the tests in `file` (serve names each test's file in
 * it after the test's full name). */
export declare function cassetteDir(root: string, file: string): string;
