"""The command line, the top layer: `main.py` (the `levelfield` entry point), one module per command
in `commands/`, the demo's stages (`demo_stage.py`), the multi-process launcher (`launch/`) and the
auditor's replay (`reproduce/`). It may import every layer below (docs/architecture.md, Layers).

    levelfield --help
"""
