"""trimbench: reproduce research on trimmed text embeddings, one Snakemake workflow.

Imports sit at the top of each module, except the heavy libraries (torch, transformers,
sentence-transformers, datasets, faiss, pyserini, ir-measures, scikit-learn, matplotlib where noted):
those are imported inside the functions that use them, so that Snakemake's parse (which imports the
config, models and track checks modules) and the light jobs (tables, views, data) never load them,
and pyserini only after :mod:`trimbench.java` has set up its JVM.
"""
