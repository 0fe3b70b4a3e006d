"""The analyses: each page's one call, from loaded predictions and a config to a result.

:func:`~core.analyses.analysis.analyze`, the model comparison, subgroups and windows, the
calibration tests, the estimator comparison, validity, the CORP and smooth diagrams, the
paper gallery, the gate and the findings. The engines in :mod:`core.stream` gather the same
statistics out of core and end in the same assemblies.
"""
