"""Each command's pipeline: the stages called in order, scan -> facts -> plan -> fix.

In: the paths and the command's options. Out: what the command reports. scan.py runs
`migrate scan` (the scanner, then the repository facts when a fix depends on other files,
then the plan); apply.py runs `migrate apply` on that planned scan (the plan for the fixes
this run may write, then the fixer: a diff, the files written, or the test gate's choice).
planfacts.py builds the facts from a scan's files and hints, on a thread if asked.
"""
