"""The public API of core: what ``core/__init__.py`` exports resolves, is documented, one name per idea."""

from __future__ import annotations

import inspect

import core


def test_every_export_resolves_and_is_documented():
    for name in core.__all__:
        value = getattr(core, name)
        if inspect.isclass(value) or inspect.isfunction(value):
            assert inspect.getdoc(value), name
            assert value.__module__.startswith("core"), name


def test_helpers_and_twins_are_not_exported():
    # internals of the binning and of the bands, formatting helpers, and the twins of
    # guarantee_epsilon / largest_bins are reached through their modules
    internal = {
        "bin_indices",
        "assign_to_edges",
        "shared_edges",
        "poisson_binomial_pmf",
        "histogram_binning_epsilon",
        "largest_n_bins",
        "format_number",
        "format_pvalue",
        "format_interval",
        "format_percent",
        "safe_csv",
        "find_groups",
        "Registry",
    }
    assert not internal & set(core.__all__)
    assert {"analyze", "calibration_error", "load_predictions", "compare_models"} <= set(
        core.__all__
    )


def test_one_object_per_exported_name():
    objects = {}
    for name in core.__all__:
        value = getattr(core, name)
        if inspect.isfunction(value):
            assert id(value) not in objects, (name, objects.get(id(value)))
            objects[id(value)] = name


def test_no_export_is_shadowed_by_a_submodule():
    # importing core.X sets the attribute X of core: a function named like a module is lost
    import pkgutil

    submodules = {m.name for m in pkgutil.iter_modules(core.__path__)}
    assert not submodules & set(core.__all__)
