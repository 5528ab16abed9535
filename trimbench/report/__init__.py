"""The report's views across tracks: the scoreboard, the works' claims checked."""
