"""levelfield: an MLPerf-style benchmark suite that compares ML frameworks fairly.

The installed package is one namespace: `levelfield.rules`, `levelfield.reference`,
`levelfield.checker` and `levelfield.tools` map the repository's top-level folders
(see setup.cfg and docs/packaging.md). `levelfield.ground` is the ground floor
every stage shares; `levelfield.cli.main` and `levelfield.cli.commands` are the command
line on top (docs/architecture.md, Layers).

    levelfield --help
"""

__version__ = "0.1.0"
