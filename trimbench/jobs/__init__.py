"""Running a job: the rule runner, the warm interpreter, atomic outputs, cached-artifact errors, fault injection."""
