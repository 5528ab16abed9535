"""Running a job: the rule runner, its ranks over a node's devices, the warm interpreter, atomic outputs,
cached-artifact errors, fault injection."""
