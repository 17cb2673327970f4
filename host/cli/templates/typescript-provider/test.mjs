// `npm test`: the *.test.ts files here, turned into JavaScript by the esbuild plinth's toolchain
// installed (in plinth's tools directory: $PLINTH_TOOLS, default ~/.plinth/tools), then run by
// node's test runner. Nothing is downloaded.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";

const home = process.env.PLINTH_HOME || join(homedir(), ".plinth");
const tools = process.env.PLINTH_TOOLS || join(home, "tools");
const esbuild = join(tools, "js", "node_modules", "esbuild", "bin", "esbuild");
if (!existsSync(esbuild)) {
  console.error(`no esbuild at ${esbuild}: install plinth's TypeScript toolchain (plinth's scripts/setup)`);
  process.exit(1);
}
const tests = readdirSync(".").filter((file) => file.endsWith(".test.ts"));
const out = mkdtempSync(join(tmpdir(), "plinth-test-"));
try {
  const built = tests.map((test) => join(out, test.replace(/\.ts$/, ".mjs")));
  // `process.exit` here would skip the `finally` below and leave the directory behind.
  const failed = tests.find((test, i) => {
    const run = spawnSync(
      esbuild,
      [test, "--bundle", "--platform=node", "--format=esm", "--log-level=warning", `--outfile=${built[i]}`],
      { stdio: "inherit" },
    );
    return run.status !== 0;
  });
  if (failed !== undefined) {
    console.error(`esbuild could not build ${failed}`);
    process.exitCode = 1;
  } else {
    const run = spawnSync(process.execPath, ["--test", ...built], { stdio: "inherit" });
    process.exitCode = run.status ?? 1;
  }
} finally {
  rmSync(out, { recursive: true, force: true });
}
