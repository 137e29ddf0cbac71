import type { AgentProxy, AgentProxyMatchers } from "./index.js";

export type * from "./index.js";

/** The active test's cassette, mode, trajectory and mocks. */
export declare const agentproxy: AgentProxy;

declare module "vitest" {
  interface Assertion<T = any> extends AgentProxyMatchers<void> {}
}
