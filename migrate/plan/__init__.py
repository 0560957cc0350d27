"""Stage 3, plan: decide, for the whole repository at once, which fixes are written together.

In: the scan's findings (each with its fix), the rules selected and the repository facts
(migrate.facts). Out: a FixPlan, the findings as the run will treat them: a fix that would leave
the tree inconsistent is held back (demoted to assisted, its message saying why). fixplan.py
runs the planning rules (rules.py) until nothing more is held; context.py is what they share,
wrappers.py the repository's own wrappers' part.
"""
