"""Stage 4, fix: write the planned fixes.

In: the plan's findings and the fix units they form. Out: each file's fixed text (FileFix:
applied, remaining and held findings, or why it was left alone), a diff, or the files
written atomically. fixer.py runs the fix rounds on a file: edits.py chooses and splices the
edits, imports.py adds and drops imports, source_text.py keeps the file's encoding and line
endings; tidy.py repairs the layout a rewrite leaves; write_safety.py says which files git
could not restore. testgate.py keeps only the fixes the project's tests pass (`apply
--test`): test_command.py runs the command, gate_workspace.py is the scratch copy it runs
in, test_selection.py the tests that reach a change (`--test-select imports`),
gate_report.py what the gate found. The apply command's pipeline (migrate.pipeline.apply)
calls them.
"""
