import { test } from "vitest";

// Two names, one cassette name: the second is refused.
test("a b", async () => {});
test("a-b", async () => {});
