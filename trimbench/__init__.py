"""trimbench: reproduce research on trimmed text embeddings, one Snakemake workflow."""
