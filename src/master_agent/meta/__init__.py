"""The meta-orchestrator (seed 004): a team of roles that designs, compiles, evaluates and hardens agent
systems within budgets. ``artifacts`` are the documents the roles own, ``broker`` stores them by type
and version, ``failures`` routes a failure to the role that fixes it, ``compiler`` turns a SystemSpec
into a runnable system."""
