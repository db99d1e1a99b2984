"""seq-transformer-standard: seq-transformer's code at BERT-base's encoder sizes (README.md).

Its own files are what differs: `common/` (the masked-token generator `markov-mlm-v1`, the token-accuracy
metric, the task's `TransformerSpec`, predict's smaller chunks) and each framework's
`implementation.py`, a subclass of seq-transformer's with that spec and predict answering token ids.
The networks and their weight mappings are seq-transformer's, which take the spec.
"""

REUSES = "seq-transformer"  # the task whose code this one reuses (registry.reused_task)
