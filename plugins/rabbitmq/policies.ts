// Policies: definitions (message TTLs, length limits, dead-lettering, ...) the broker applies to
// the queues and exchanges whose names match a pattern. Operator policies are the same, set by
// the operator as a ceiling on what users' policies and arguments may ask for. Both change in
// place.
import { InvalidInputs, t, type ResourceType } from "@plinth/sdk";
import { get, path, put, remove } from "./api.js";
import { type Arguments, checkName, refuseExisting, vhostProp } from "./common.js";
import { inVhost, parseInVhost } from "./ids.js";

interface PolicyInputs {
  name: string;
  vhost: string;
  pattern: string;
  priority: number;
  apply_to: string;
  definition: Arguments;
}

interface BrokerPolicy {
  name: string;
  pattern: string;
  priority: number;
  "apply-to": string;
  definition: Arguments;
}

function policyType(collection: "policies" | "operator-policies", what: string, applyTo: string[], description: string): ResourceType<PolicyInputs, PolicyInputs> {
  const props = {
    name: t.string({ required: true, replaceOnChange: true, description: `The ${what}'s name.` }),
    vhost: vhostProp,
    pattern: t.string({ required: true, description: "A regular expression of the names of the queues (or exchanges) it applies to." }),
    priority: t.integer({ default: 0, description: "Of two matching policies, the one with the higher priority applies." }),
    apply_to: t.enum(applyTo, { default: applyTo[0], description: `What it applies to: ${applyTo.map((a) => `\`${a}\``).join(", ")}.` }),
    definition: t.map(t.any(), { required: true, description: "Its keys and values, e.g. `{\"max-length\": 1000, \"message-ttl\": 60000}`." }),
  };
  const where = (vhost: string, name: string) => `${collection}/${path(vhost, name)}`;
  const write = async (inputs: PolicyInputs) => {
    const { pattern, priority, definition } = inputs;
    await put(where(inputs.vhost, inputs.name), { pattern, priority, definition, "apply-to": inputs.apply_to });
    return inputs;
  };
  const form = `${what} (NAME@VHOST)`;
  return {
    description,
    inputs: props,
    outputs: props,
    check(inputs) {
      checkName("name", inputs.name);
      checkName("vhost", inputs.vhost);
      if (inputs.definition && typeof inputs.definition === "object" && Object.keys(inputs.definition).length === 0) {
        throw InvalidInputs.of("definition", "must set at least one key");
      }
    },
    async create(inputs) {
      const id = inVhost(inputs.name, inputs.vhost);
      await refuseExisting(where(inputs.vhost, inputs.name), `${what} \`${inputs.name}\` in vhost \`${inputs.vhost}\``, id);
      return { id, outputs: await write(inputs) };
    },
    async read(state) {
      const { name, vhost } = parseInVhost(state.id, form);
      const found = await get<BrokerPolicy>(where(vhost, name));
      if (!found) return null;
      const now = { name, vhost, pattern: found.pattern, priority: found.priority, apply_to: found["apply-to"], definition: found.definition };
      return { inputs: now, outputs: now };
    },
    async update(_olds, news) {
      return write(news);
    },
    async delete(state) {
      const { name, vhost } = parseInVhost(state.id, form);
      await remove(where(vhost, name));
    },
  };
}

export const Policy = policyType(
  "policies",
  "policy",
  ["all", "queues", "exchanges"],
  "A policy: a definition applied to the queues and exchanges of a vhost whose names match a pattern.",
);

export const OperatorPolicy = policyType(
  "operator-policies",
  "operator policy",
  ["queues"],
  "An operator policy: limits (`expires`, `message-ttl`, `max-length`, `max-length-bytes`, ...) that override what users' policies and queue arguments ask for.",
);
