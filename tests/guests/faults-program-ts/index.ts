// Registers one resource of the faults provider: the type named by the `fault` config value.
import type { Context } from "@plinth/sdk";

export default function main(ctx: Context): void {
  ctx.resource(`faults:${ctx.requireConfig("fault")}`, "faulty", { size: 1 });
}
