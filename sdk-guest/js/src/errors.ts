// Errors a provider throws to say why a call failed; any other exception fails the call with its
// message.

import type { CheckFailure } from "./schema.js";
import type { Properties } from "./value.js";

/** The inputs or configuration were rejected. */
export class InvalidInputs extends Error {
  constructor(readonly failures: CheckFailure[]) {
    super(failures.map((f) => (f.property ? `${f.property}: ${f.reason}` : f.reason)).join("; "));
    this.name = "InvalidInputs";
  }

  /** One rejected property. */
  static of(property: string, reason: string): InvalidInputs {
    return new InvalidInputs([{ property, reason }]);
  }
}

/** The resource does not exist anymore. */
export class NotFound extends Error {
  constructor(message = "the resource does not exist") {
    super(message);
    this.name = "NotFound";
  }
}

/**
 * Created but failed to initialize: plinth records the resource with these outputs (so that
 * it can be deleted or retried) and halts.
 */
export class PartiallyCreated extends Error {
  constructor(
    readonly id: string,
    readonly outputs: Properties,
    readonly reasons: string[],
  ) {
    super(reasons.join("; "));
    this.name = "PartiallyCreated";
  }
}
