"""levelfield.checker: the submission checker (installed from the repository folder `checker/`).

Planned (issue 6): a loader that walks a submission tree into typed records,
small registered checks with stable codes, and text/JSON reporters. Importing
this package must never import an ML framework: auditors run it without one.
"""
