"""rest example: a Python program driving the `rest` provider, which is written in TypeScript.
The two meet only through plinth's WIT contract.

It keeps an application's settings as a JSON document on a REST API. Run any server that
stores what is PUT and returns it on GET at 127.0.0.1:8080 (or change the grant in
Plinth.yaml), then:

    plinth stack init dev
    plinth config set rest:url http://127.0.0.1:8080/v1
    plinth config set password s3cr3t --secret
    plinth up
    plinth config set replicas 3 && plinth up    # updated in place
    plinth refresh                               # shows edits made to the document out of band
    plinth destroy

`Object` comes from the SDK generated from the TypeScript provider's schema
(`plinth gen-sdk ../../plugins/rest --lang python`, in sdks/rest/python): typed in Python.
"""

from plinth import Context
from plinth_rest import Object


def main(ctx: Context) -> None:
    name = ctx.config("name", "demo")
    replicas = ctx.config_int("replicas", 1)
    # A secret stays one through the TypeScript provider: the document's data in state is sealed.
    password = ctx.require_secret_config("password")
    settings = Object(ctx, "settings", path=f"apps/{name}",
                      data={"name": name, "replicas": replicas, "password": password})
    ctx.export("url", settings.url)
    ctx.export("data", settings.data)
