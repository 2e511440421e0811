"""FixGraph's domain logic: traceback parsing, fingerprints, the decision graph, diagnosis.

Plain Python. Nothing in this package imports Django, so it can be tested and
benchmarked on its own; `kb.services` translates ORM rows into these types.
"""
