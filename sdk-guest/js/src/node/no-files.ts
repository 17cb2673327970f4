// Stands in for `wasi:filesystem/preopens` in programs and policy packs, which are granted no
// directory: the SDK's `node:fs` then refuses every path, saying so (and that no grant can
// change it: only providers are granted directories).
export function getDirectories(): [] {
  return Object.assign([] as [], { ungrantable: true });
}
