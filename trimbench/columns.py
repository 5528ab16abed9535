"""The columns each dataset kind is normalised to, and the Home Depot table's hub columns.

Kept apart from :mod:`trimbench.data` (pandas) so that the config checks, which run while
Snakemake parses the workflow, can name them without importing pandas.
"""

KIND_COLUMNS = {
    "sts": ("sentence1", "sentence2", "score"),
    "pairs": ("anchor", "positive"),
    "triplets": ("anchor", "positive", "negative"),
    "pair-class": ("sentence1", "sentence2", "label"),
}
#: columns a kind uses as numbers (the rest are text)
NUMERIC_COLUMNS = ("score", "label")

#: the Home Depot study's columns (ours -> bstds/home_depot's), as the seed's src/data.py reads them:
#: products keyed by entity_id, queries by the row id
HOMEDEPOT_COLUMNS = {"query": "query", "document": "description", "product": "entity_id", "query_id": "id",
                     "relevance": "relevance"}
#: Home Depot columns that are keys: text or numbers alike
HOMEDEPOT_KEYS = ("product", "query_id")
