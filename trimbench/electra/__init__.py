"""The ELECTRA track (truncated encoders): config checks and fine-tunings, training, its views."""
