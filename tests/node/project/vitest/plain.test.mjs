import { expect, test } from "vitest";

// A test that asks the model nothing needs no cassette, recorded or replayed.
test("arithmetic", () => {
  expect(1 + 1).toBe(2);
});
