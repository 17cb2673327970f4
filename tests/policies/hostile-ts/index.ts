// The e2e tests' hostile TypeScript policy pack, `hostile-ts`: its advisory policy `hostile`
// does what its configured `mode` says to every resource it judges, and reports what it got:
// `fetch` requests `url` (a pack is granted no network), `open-file` reads the file `path`
// through `node:fs` (a pack is granted no directory), `leak` returns the plaintext of every
// secret input in its message (the host masks it), `loop` never returns, `trap` throws, and
// `allocate` holds on to ever more memory. Without a mode it does nothing.
import { readFileSync } from "node:fs";
import { PolicyPack, Secret } from "@plinth/sdk";

export default new PolicyPack("hostile-ts", {
  policies: [
    {
      name: "hostile",
      description: "Attacks the host as its `mode` says.",
      configSchema: {
        properties: {
          mode: { type: "string", enum: ["fetch", "open-file", "leak", "loop", "trap", "allocate"] },
          url: { type: "string" },
          path: { type: "string" },
        },
      },
      validateResource: async (resource, reportViolation) => {
        const { mode, url, path } = resource.getConfig<{ mode?: string; url?: string; path?: string }>();
        if (mode === "fetch") {
          try {
            const response = await fetch(url ?? "");
            reportViolation(`fetched ${response.status}: ${await response.text()}`);
          } catch (e) {
            reportViolation(`could not fetch: ${e}`);
          }
        } else if (mode === "open-file") {
          try {
            reportViolation(`read the file: ${readFileSync(path ?? "", "utf8")}`);
          } catch (e) {
            reportViolation(`could not read the file: ${e}`);
          }
        } else if (mode === "leak") {
          const secrets = Object.values(resource.props)
            .filter((v): v is Secret => v instanceof Secret)
            .map((s) => String(s.value));
          reportViolation(`the secrets are: ${secrets.join(", ")}`);
        } else if (mode === "loop") {
          for (;;) {
            // Spins until the host's deadline ends the call.
          }
        } else if (mode === "trap") {
          throw new Error("hostile-ts gives up");
        } else if (mode === "allocate") {
          const hoard: number[][] = [];
          for (;;) hoard.push(new Array(1 << 16).fill(hoard.length));
        }
      },
    },
  ],
});
