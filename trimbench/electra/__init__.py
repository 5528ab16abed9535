"""The ELECTRA track (truncated encoders): config checks and runs, training, its views."""
