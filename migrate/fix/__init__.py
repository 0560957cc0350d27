"""Stage 4, fix: write the planned fixes.

In: the plan's findings and the fix units they form. Out: each file's fixed text (FileFix:
applied, remaining and held findings, or why it was left alone), a diff, or the files
written atomically. fixer.py applies the edits and fixes up imports; tidy.py repairs the
layout a rewrite leaves; testgate.py keeps only the fixes the project's tests pass
(`apply --test`). The apply command's pipeline (migrate.pipeline.apply) calls them.
"""
