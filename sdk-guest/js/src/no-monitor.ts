// Stands in for the `plinth:plugin/monitor` import in provider components, which do not have
// it: the SDK's program side is bundled with them but must not be used there.
function unavailable(): never {
  throw new Error("the program API (Context, Output, resources) is not available in a provider");
}

export const registerResource = unavailable;
export const readResource = unavailable;
export const registerApply = unavailable;
export const registerOutputs = unavailable;
export const invoke = unavailable;
export const config = unavailable;
export const getStackInfo = unavailable;
export const log = unavailable;
