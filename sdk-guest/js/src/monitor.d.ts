// The program's imports, as componentize-js binds `plinth:plugin/monitor@0.3.0`.
declare module "plinth:plugin/monitor@0.3.0" {
  // A relative import is not allowed in an ambient module; an import type is resolved beside this file.
  type WitValue = import("./value.js").WitValue;

  export interface CustomTimeouts {
    createSeconds?: number;
    updateSeconds?: number;
    deleteSeconds?: number;
  }
  export interface ResourceOptions {
    dependsOn: bigint[];
    parent?: bigint;
    provider?: bigint;
    protect: boolean;
    retainOnDelete: boolean;
    deleteBeforeReplace: boolean;
    ignoreChanges: string[];
    replaceOnChanges: string[];
    aliases: string[];
    customTimeouts?: CustomTimeouts;
    importId?: string;
  }
  export interface RegisterRequest {
    type: string;
    name: string;
    custom: boolean;
    inputs: WitValue;
    options: ResourceOptions;
  }
  export type LogLevel = "debug" | "info" | "warn" | "error";
  export function registerResource(request: RegisterRequest): bigint;
  export function readResource(type: string, name: string, id: string, inputs: WitValue, options: ResourceOptions): bigint;
  export function registerApply(inputs: WitValue[]): bigint;
  export function registerOutputs(handle: bigint | undefined, outputs: WitValue): void;
  /** Throws the error string. */
  export function invoke(token: string, args: WitValue): WitValue;
  export function config(key: string): WitValue | undefined;
  export function getStackInfo(): { project: string; stack: string; dryRun: boolean };
  export function log(level: LogLevel, message: string): void;
}
