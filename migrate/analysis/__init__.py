"""Shared analysis below the checks and the facts: what every later stage asks of a file or of
the repository, computed once per scan.

- parsed.py: each file's tree, parsed once per scan and handed to every stage that asks
  (the checks' walk, the repository pass, the intent comparison, the planner's facts), with
  a count of the parses for the tests that guard against re-parsing.
- names.py: the repository's import index (which module re-exports which name), and a
  memo that builds one structure per repository (per merged facts) instead of per file.

Only the standard library and the shared vocabulary are imported here.
"""
