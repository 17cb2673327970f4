/// <reference path="../monitor.d.ts" />
/// <reference path="../node/wasi-filesystem.d.ts" />
// The prebuilt program runtime: componentized once per SDK and toolchain, it runs any
// TypeScript/JavaScript program. plinth bundles a program (its code and the SDK) on each build
// and preopens the bundle read-only at `/.plinth-code`; the first call evaluates it, and every
// call is served by the `callbacks` it registers. An edit changes the bundle only, so the
// runtime and its precompiled form are reused as they are.

import * as monitor from "plinth:plugin/monitor@0.3.0";
import { readFileSync } from "../node/fs.js";
import { mapStack } from "../sourcemap.js";

/** Where plinth puts the program's bundle and its source map. */
const CODE = "/.plinth-code";

/** The imports the bundle asks for (by `require`: it is a script, not a module). */
const IMPORTS: Record<string, unknown> = { "plinth:plugin/monitor@0.3.0": monitor };

interface Callbacks {
  run(): Promise<void>;
  resume(handle: bigint, inputs: unknown[]): Promise<unknown>;
}

interface Loaded {
  callbacks: Callbacks;
}

let loaded: Loaded | undefined;

/** The bundle's exports, evaluating it on first use; a failure is the call's error. */
function guest(): Loaded {
  if (loaded) return loaded;
  const scope = globalThis as Record<string, unknown>;
  try {
    scope.__plinthSourceMap = JSON.parse(readFileSync(`${CODE}/bundle.js.map`, "utf8"));
    scope.__plinthEvaluated = true;
    scope.require = (name: string) => {
      if (Object.prototype.hasOwnProperty.call(IMPORTS, name)) return IMPORTS[name];
      throw new Error(`the program imports ${JSON.stringify(name)}, which the program world does not have`);
    };
    const code = readFileSync(`${CODE}/bundle.js`, "utf8");
    // Indirect: evaluated in the global scope, as the bundle (an IIFE) expects.
    (0, eval)(code);
  } catch (e) {
    throw { payload: describe(e) };
  }
  const registered = scope.__plinthGuest as Loaded | undefined;
  if (!registered || typeof registered.callbacks?.run !== "function") {
    throw { payload: "the program's bundle registered no callbacks: rebuild it with this plinth" };
  }
  loaded = registered;
  return loaded;
}

/** An exception raised while the bundle was evaluated, with its frames in the user's files. */
function describe(e: unknown): string {
  if (!(e instanceof Error)) return String(e);
  const frames = mapStack(e.stack ?? "").slice(0, 5);
  const message = `${e.name}: ${e.message}`;
  return frames.length ? `${message}\n${frames.map((f) => `    at ${f}`).join("\n")}` : message;
}

// Async, as the SDK's own are: a failure to load rejects the call's promise.
export const callbacks: Callbacks = {
  async run() {
    return guest().callbacks.run();
  },
  async resume(handle, inputs) {
    return guest().callbacks.resume(handle, inputs);
  },
};
