// plinth's TypeScript/JavaScript SDK: write a provider, a program or a policy pack, get a component.
// The DOM library types the globals a component has (`fetch`, `console`, timers, `TextEncoder`),
// so that no user tsconfig needs "DOM" in its `lib`.
/// <reference lib="dom" />
export { Secret, Float, unknown, Unknown, type Value, type Properties } from "./value.js";
export { t, type Prop, type PropOptions, type Type, type CheckFailure } from "./schema.js";
export { InvalidInputs, NotFound, PartiallyCreated } from "./errors.js";
export {
  provider,
  type ProviderDefinition,
  type ResourceType,
  type FunctionType,
  type ResourceContext,
  type State,
  type Diff,
  type ReadResult,
  type Capabilities,
} from "./provider.js";
export {
  Context,
  Output,
  Resource,
  ComponentResource,
  ConfigError,
  type ResourceOptions,
  type Main,
} from "./program.js";
export {
  PolicyPack,
  type Policy,
  type PolicyPackArgs,
  type PolicyResource,
  type PolicyConfigSchema,
  type EnforcementLevel,
  type JsonSchema,
  type ResourceValidationArgs,
  type StackValidationArgs,
  type ReportViolation,
  type ReportStackViolation,
} from "./policy.js";
