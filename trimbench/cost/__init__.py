"""The cost plan's parts: what a job's steps cost (FLOPs, memory), on which GPU, over how many tokens."""
