"""The cost plan of a run: every job of its dry run priced before the queue (docs/plan.md)."""
