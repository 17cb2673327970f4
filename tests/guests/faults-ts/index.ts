// A provider that misbehaves on purpose, for the tests: each resource type fails its create in
// one way a guest can (an exception, an endless loop, memory without bound).
import { provider, t } from "@plinth/sdk";

const inputs = { size: t.integer() };

export default provider({
  name: "faults",
  version: "0.1.0",
  resources: {
    "faults:Throw": {
      inputs,
      create() {
        throw new Error("thrown on purpose by the faults provider");
      },
    },
    "faults:Loop": {
      inputs,
      create() {
        for (;;) {
          // Spins until the call's deadline.
        }
      },
    },
    "faults:Alloc": {
      inputs,
      create() {
        const hoard: number[][] = [];
        for (;;) hoard.push(new Array(1 << 20).fill(hoard.length));
      },
    },
  },
});
