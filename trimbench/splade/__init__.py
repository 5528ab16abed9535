"""The SPLADE track: config checks, the model and its training, sparse vectors and search, its views."""
