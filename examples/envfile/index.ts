// envfile example: a TypeScript program driving the `envfile` provider, which is written in
// Python. The two meet only through plinth's WIT contract.
//
// It writes `env/<stack>/app.env` for an application, with its database password as a secret
// variable (sealed in state, hidden in displays, plain in the file the application reads):
//
//   plinth stack init dev
//   plinth config set db_password s3cr3t --secret
//   plinth up
//   plinth config set replicas 3 && plinth up    # the file is rewritten in place
//   plinth refresh                               # shows edits made to the file out of band
//   plinth destroy
//
// `File` comes from the SDK generated from the Python provider's schema
// (`plinth gen-sdk ../../plugins/envfile --lang ts`, in sdks/envfile/ts): typed in TypeScript.
import type { Context } from "@plinth/sdk";
import { File } from "@plinth/envfile";

export default function main(ctx: Context): void {
  const env = new File(ctx, "app", {
    path: `${ctx.stack}/app.env`,
    vars: {
      APP_NAME: ctx.config("name") ?? "demo",
      REPLICAS: String(ctx.configNumber("replicas") ?? 1),
    },
    secrets: { DB_PASSWORD: ctx.requireSecretConfig("db_password") },
  });
  ctx.export("path", env.path);
  ctx.export("lines", env.lines);
}
