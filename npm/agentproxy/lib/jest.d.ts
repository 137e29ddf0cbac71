import type { AgentProxy, AgentProxyMatchers } from "./index.js";

export type * from "./index.js";

/** The active test's cassette, mode, trajectory and mocks. */
export declare const agentproxy: AgentProxy;

declare global {
  namespace jest {
    interface Matchers<R> extends AgentProxyMatchers<R> {}
  }
}
