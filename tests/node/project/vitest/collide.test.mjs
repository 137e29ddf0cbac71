import { test } from "vitest";

// Two names, one cassette name: the second is refused.
test("a b", async () => {});
test("a-b", async () => {});

// Tests that run concurrently in one file: the second is refused, saying why.
test.concurrent("first at once", async () => {
  await new Promise((resolve) => setTimeout(resolve, 200));
});
test.concurrent("second at once", async () => {
  await new Promise((resolve) => setTimeout(resolve, 200));
});
