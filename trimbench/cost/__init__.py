"""What a job costs before it runs: the GPUs it may run on (``gpus``), the architecture facts of a
registry model (``architecture``) and one step of a job counted on that architecture (``step``:
FLOPs and peak device memory, measured on the real transformers model under torch's fake tensors,
with no weights and no memory). The plan (``trimbench.plan``) multiplies these by the job's steps.

On the shared floor: it imports data, jobs, errors and models, never a track or the config.
"""
