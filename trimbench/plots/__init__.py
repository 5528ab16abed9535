"""The drawing kit every track and the report draw with: byte-reproducible figure files, reference lines
and tick labels (figures.py), Pareto fronts (pareto.py), a score's panels over the (layer, dim) grid (layers.py)."""
