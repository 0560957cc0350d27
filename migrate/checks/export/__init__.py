"""Rewrites shared by the capture (MIG101-MIG103) and serialization (MIG201-MIG205) rules.

One scheme, applied everywhere: a name bound to a capture keeps the `ExportedProgram`.
Calls on it become `name.module()(...)`, saves pass it to `torch.export.save`, mobile
lowering passes it to `to_edge_transform_and_lower`. A capture and every use of its result
in the scope form one fix (a "group"): the capture rule and each use-site rule attach the
same edits, so the fixer applies them together or not at all. A use the scheme does not
cover (returned, stored on an attribute, passed to another function) makes the whole
group assisted: the tool cannot know whether that code wants the program or a module.

The modules, each importing only those listed before it:

- `builder`: `FixBuilder`, the group fix being assembled (edits, imports, notes, or the
  reason a person is needed), turned into a finding's fix by the rule that reports it;
- `apis`: the TorchScript and export APIs the rewrites read, and a call's arguments bound
  to their parameters;
- `spelling`: how the new code names what it calls (imports added only where a name is
  free), the export call, the ExecuTorch lowering, renamed artifact paths;
- `inputs`: a capture's example inputs, from the source, the module's class, or what
  `migrate record` saw at run time (with the sizes it saw vary);
- `specialization`: where export would fix what the capture did not (another call
  structure or shape than the example, sizes a trace followed, data read into Python);
- `exports`: the `torch.export.export` call a trace, `trace_module` or script becomes;
- `uses`: every read of a capture's result kept working (calls, saves, lite saves,
  mobile lowering);
- `per_call`: a scripted module called with several structures (a test comparing it with
  the module, a save loaded back) exported once per call;
- `alternatives`: one name bound to a capture on each path of a `try`/`if`;
- `captures`: `capture_fix`, the group fix of one capture, and the route it takes (the
  eager module, the program, the program's module, one export per call);
- `origins`: where a saved or lowered value comes from, and the fix that follows from it.
"""
