// rabbitmq: a provider, in TypeScript, for a RabbitMQ broker, over its management HTTP API (the
// rabbitmq_management plugin): vhosts, users, permissions, topic permissions, exchanges, queues,
// bindings, policies, operator policies, shovels and federation upstreams, the resources of the
// Terraform provider cyrilgdn/rabbitmq. `refresh` reads each back, so what is changed on the
// broker out of band shows as drift; every type imports by its id.
//
// It asks for no network access itself: grant it the management API's authority in Plinth.yaml
// (`grants: { http: ["rabbit.internal:15672"] }`); anything else it tried to reach is refused.
import { InvalidInputs, provider, t } from "@plinth/sdk";
import { Permissions, TopicPermissions, User, VHost } from "./access.js";
import { type Config, connect } from "./api.js";
import { FederationUpstream, Shovel } from "./parameters.js";
import { OperatorPolicy, Policy } from "./policies.js";
import { Binding, Exchange, Queue } from "./topology.js";

export default provider<Config>({
  name: "rabbitmq",
  version: "0.1.0",
  description: "RabbitMQ vhosts, users, permissions, exchanges, queues, bindings, policies, shovels and federation upstreams, over the management HTTP API",
  config: {
    endpoint: t.string({ required: true, description: "The management API's base URL, e.g. http://127.0.0.1:15672" }),
    username: t.string({ default: "guest", description: "The user the provider acts as: an `administrator` to manage users, vhosts and operator policies" }),
    password: t.string({ required: true, secret: true, description: "That user's password" }),
  },
  configure(config) {
    const wrong = connect(config);
    if (wrong) throw InvalidInputs.of(wrong.property, wrong.reason);
  },
  resources: {
    "rabbitmq:VHost": VHost,
    "rabbitmq:User": User,
    "rabbitmq:Permissions": Permissions,
    "rabbitmq:TopicPermissions": TopicPermissions,
    "rabbitmq:Exchange": Exchange,
    "rabbitmq:Queue": Queue,
    "rabbitmq:Binding": Binding,
    "rabbitmq:Policy": Policy,
    "rabbitmq:OperatorPolicy": OperatorPolicy,
    "rabbitmq:Shovel": Shovel,
    "rabbitmq:FederationUpstream": FederationUpstream,
  },
});
