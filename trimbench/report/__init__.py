"""The report's views shared by tracks: the 2DMSE grid layout, figure writing, Pareto fronts, the scoreboard,
the works' claims checked."""
