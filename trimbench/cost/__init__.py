"""What a job costs before it runs: the work each job does as its track describes it (``work``), the
GPUs it may run on (``gpus``), the architecture facts of a registry model (``architecture``), one step
of a job counted on that architecture (``step``: FLOPs and peak device memory, measured on the real
transformers model under torch's fake tensors, with no weights and no memory) and the token lengths
that set a step's size (``lengths``). The plan (``trimbench.plan``) adds them up over the dry run's jobs.

On the shared floor: it imports data, jobs, errors and models, never a track or the config.
"""
