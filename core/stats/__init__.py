"""Statistics of one data set: lenses, binnings, binned views, scores, PAV and CORP, intervals.

The layer above :mod:`core.data` and :mod:`core.worlds`: it turns predictions into the 1-D
problems and per-bin statistics the estimators read, and holds the closed-form statistics
(binomial intervals, consistency bands, histogram-binning guarantees) the analyses show.
"""
