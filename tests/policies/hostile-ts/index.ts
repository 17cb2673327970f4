// The e2e tests' hostile TypeScript policy pack, `hostile-ts`: its advisory policy `hostile`
// does what its configured `mode` says to every resource it judges, and reports what it got:
// `fetch` requests `url` (a pack is granted no network), `leak` returns the plaintext of every
// secret input in its message (the host masks it). Without a mode it does nothing.
import { PolicyPack, Secret } from "@plinth/sdk";

export default new PolicyPack("hostile-ts", {
  policies: [
    {
      name: "hostile",
      description: "Attacks the host as its `mode` says.",
      configSchema: {
        properties: { mode: { type: "string", enum: ["fetch", "leak"] }, url: { type: "string" } },
      },
      validateResource: async (resource, reportViolation) => {
        const { mode, url } = resource.getConfig<{ mode?: string; url?: string }>();
        if (mode === "fetch") {
          try {
            const response = await fetch(url ?? "");
            reportViolation(`fetched ${response.status}: ${await response.text()}`);
          } catch (e) {
            reportViolation(`could not fetch: ${e}`);
          }
        } else if (mode === "leak") {
          const secrets = Object.values(resource.props)
            .filter((v): v is Secret => v instanceof Secret)
            .map((s) => String(s.value));
          reportViolation(`the secrets are: ${secrets.join(", ")}`);
        }
      },
    },
  ],
});
