"""A program using a PyPI package whose dependency is imported lazily, at run time."""

from slugify import slugify

from plinth import Context


def main(ctx: Context) -> None:
    ctx.export("slug", slugify(ctx.config("title", "Héllo Wörld, ça va?")))
