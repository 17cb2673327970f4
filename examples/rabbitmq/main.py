"""rabbitmq example: a Python program declaring a shop's messaging on a RabbitMQ broker, through
the `rabbitmq` provider, which is written in TypeScript and talks to the broker's management
HTTP API. The two meet only through plinth's WIT contract.

It needs a broker with the management plugin (`rabbitmq-plugins enable rabbitmq_management`)
at 127.0.0.1:15672 (or change the grant in Plinth.yaml), and an administrator's credentials:

    plinth stack init dev
    plinth config set rabbitmq:endpoint http://127.0.0.1:15672
    plinth config set rabbitmq:username admin
    plinth config set rabbitmq:password '...' --secret
    plinth config set app_password '...' --secret
    plinth up
    plinth refresh        # shows what was changed on the broker out of band (rabbitmqctl, the UI)
    plinth destroy

The classes come from the SDK generated from the provider's schema
(`plinth gen-sdk ../../plugins/rabbitmq --lang python`, in sdks/rabbitmq/python): typed in Python.
"""

from plinth import Context, ResourceOptions
from plinth_rabbitmq import (Binding, Exchange, Permissions, Policy, Queue, TopicPermissions,
                             User, VHost)


def main(ctx: Context) -> None:
    shop = VHost(ctx, "shop", name="shop", description="The shop's orders and their events",
                 max_queues=100)
    # The password stays a secret through the TypeScript provider: sealed in state, never shown.
    app = User(ctx, "app", name="shop-app", password=ctx.require_secret_config("app_password"),
               tags=["monitoring"])
    Permissions(ctx, "app-permissions", user=app.name, vhost=shop.name,
                configure="^$", write="^events$", read="^orders$")
    events = Exchange(ctx, "events", name="events", vhost=shop.name, type="topic")
    TopicPermissions(ctx, "app-topics", user=app.name, vhost=shop.name,
                     permissions=[{"exchange": "events", "write": "^order\\.", "read": ".*"}])
    # A quorum queue: replicated, durable; poison messages go to the dead-letter queue after 5 tries.
    dead = Queue(ctx, "dead-letters", name="orders.dead", vhost=shop.name)
    orders = Queue(ctx, "orders", name="orders", vhost=shop.name, type="quorum",
                   arguments={"x-delivery-limit": 5, "x-dead-letter-exchange": "",
                              "x-dead-letter-routing-key": "orders.dead"},
                   opts=ResourceOptions(depends_on=[dead]))
    Binding(ctx, "orders-binding", vhost=shop.name, source=events.name,
            destination=orders.name, destination_type="queue", routing_key="order.#")
    Policy(ctx, "orders-limit", name="orders-limit", vhost=shop.name, pattern="^orders$",
           apply_to="queues", definition={"max-length": 100000})
    ctx.export("queue", orders.name)
    ctx.export("dead_letter_queue", dead.name)
