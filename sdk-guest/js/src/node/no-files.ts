// Stands in for `wasi:filesystem/preopens` in programs and policy packs, which are granted no
// directory: the SDK's `node:fs` then refuses every path, saying so.
export function getDirectories(): [] {
  return [];
}
