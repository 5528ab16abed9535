"""What a job costs before it runs: the work each job does (its model steps), what one step costs
(FLOPs and peak device memory, counted on fake tensors), the GPUs it may run on, and the token
lengths that set a step's size. The plan (trimbench/plan) adds them up over the dry run's jobs."""
