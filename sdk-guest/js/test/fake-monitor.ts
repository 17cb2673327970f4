// An in-process stand-in for the `plinth:plugin/monitor` import, for the SDK's unit tests:
// records what the program registers.
import type { WitValue } from "../src/value.js";

export const calls: { registered: any[]; applies: WitValue[][]; outputs: WitValue[]; config: Record<string, WitValue> } = {
  registered: [],
  applies: [],
  outputs: [],
  config: {},
};
let next = 1n;

export function registerResource(request: any): bigint {
  calls.registered.push(request);
  return next++;
}
export function readResource(type: string, name: string, id: string, inputs: WitValue, options: any): bigint {
  calls.registered.push({ type, name, id, inputs, options });
  return next++;
}
export function registerApply(inputs: WitValue[]): bigint {
  calls.applies.push(inputs);
  return next++;
}
export function registerOutputs(_handle: bigint | undefined, outputs: WitValue): void {
  calls.outputs.push(outputs);
}
export function invoke(token: string, _args: WitValue): WitValue {
  throw { payload: `no function ${token}` };
}
export function config(key: string): WitValue | undefined {
  return calls.config[key];
}
export function getStackInfo() {
  return { project: "p", stack: "dev", dryRun: false };
}
export function log(): void {}
