"""Datasets: readers (io.py), hub datasets and their contracts, the Lee, BEIR/TREC and Home Depot builders."""
