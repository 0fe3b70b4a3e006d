"""Inference: one calibration-error estimate, the bootstrap, cell statistics and resampling.

Above :mod:`core.estimators`: a value with its interval, however the resamples are drawn
(rows or cells) and evaluated (batched kernels, threads).
"""
