"""One module per rule: migNNN_<slug>.py holds the check (and its fix) for rules/MIGNNN.yaml."""
