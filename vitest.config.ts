import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: "unit",
          include: ["test/unit/**/*.test.ts"],
          testTimeout: 20_000,
        },
      },
      {
        // One file at a time: these share one Docker engine on a 2-core machine.
        test: {
          name: "docker",
          include: ["test/integration/**/*.test.ts", "test/e2e/**/*.test.ts", "test/faults/**/*.test.ts"],
          fileParallelism: false,
          testTimeout: 120_000,
          hookTimeout: 600_000,
          globalSetup: ["test/support/docker-global-setup.ts"],
        },
      },
    ],
  },
});
