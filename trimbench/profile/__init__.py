"""The trim profile of any encoder (track ``profile``): every (layer, dim, precision) cut's quality in
MTEB's terms (quality), the Matryoshka funnel (funnel), its measured cost (cost), and the Pareto front
and the cut to deploy (recommend). docs/profile.md."""
