"""Shared analysis below the checks and the facts: what every later stage asks of a file or of
the repository, computed once per scan.

- parsed.py: each file's tree, parsed once per scan and handed to every stage that asks
  (the checks' walk, the repository pass, the intent comparison, the planner's facts), with
  a count of the parses for the tests that guard against re-parsing.
- names.py: the repository's import index (which module re-exports which name), and a
  memo that builds one structure per repository (per merged facts) instead of per file.
- pyscope.py: name resolution on the standard library's ast (imports, aliases, scopes,
  re-exports): the scope table every check, fact and rewrite resolves a name with.
- astwalk.py: the tree walks (child iteration without `ast.iter_child_nodes`' cost, the
  walk limited to chosen lines) and the recursion limit deep trees need.
- textsearch.py: does a text hold one of some words or patterns (the prefilter's search,
  whole-word search).
- dataflow.py: light data flow inside one scope (where a name's value comes from, where it
  goes, the parent of a node), over any view of a file with its tree and scope table.
- tensor_reads.py: Python reading a tensor's data (`x.item()`, `int(x.max())`).
- native_source.py: serving code outside Python as tokens (C++, Java/Kotlin, Gradle, CMake,
  Podfiles): the language of a file, the tokenizer, the runtime's qualified names it uses.

Only the standard library and the shared vocabulary are imported here.
"""
