"""``memplan``: the one command line over profiling and modeling.

It sits on top of the import graph: each subcommand is a small module here with
``prepare(parser)`` and ``run(args) -> int``, composing `profiling`,
`modeling` and `presentation` directly (`memplan.cli` builds the parser).
"""
