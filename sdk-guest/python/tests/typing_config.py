"""Checked by mypy --strict (tests/run), never run: the config readers' types follow their
default."""

from plinth import Context


def program(ctx: Context) -> None:
    name: str = ctx.config("name", "world")
    count: int = ctx.config_int("count", 1)
    verbose: bool = ctx.config_bool("verbose", False)
    maybe: str | None = ctx.config("name")
    print(name, count, verbose, maybe)
