"""The dense tracks (2dmse-sts, 2dmse-retrieval, homedepot): variants, losses, evaluation, search, views."""
