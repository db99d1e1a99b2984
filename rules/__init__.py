"""levelfield rules: the suite definition as data, and the loader that validates it.

    from levelfield.rules import load_suite
    suite = load_suite()                 # newest version shipped with levelfield
    task = suite.task("fmnist-resnet")
    task.quality["target"]

Installed as `levelfield.rules` (the repository folder is `rules/`).
"""

from levelfield.rules.loader import Suite, Task, load_suite, rules_root  # noqa: F401
