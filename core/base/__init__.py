"""The base layer: errors, options, checks of array inputs, numbers, files and registries.

Everything here imports only the standard library, numpy and the other modules of this layer;
every other layer of :mod:`core` may import it.
"""
