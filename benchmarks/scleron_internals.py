"""The only place the benchmarks reach into scleron's internals (today scleron.pipeline): one
small function per internal used, so that a move of the internals is an edit here alone.
Everything else goes through the public API: scleron.load_model, scleron.generate and the
generated module (forward_dynamics, inverse_dynamics, mass_matrix, bias_forces, bind, ffi, lib, nv).

Internals used: pipeline.Report (generate's report=, for cache_hit and the cffi compile time;
build_sources' times and statement counts), pipeline.build_sources (render without compiling,
with the variant options method= and mass_matrix=), pipeline.write_sources, pipeline.mass_form
and pipeline.MASS_LOOP_FROM_NV (which mass-matrix form the default picks)."""


def _pipeline():
    from scleron import pipeline
    return pipeline


def import_internals():
    """Imports the internals now (the generation worker times imports apart from generation)."""
    _pipeline()


def new_report(name, nv):
    """A report to pass as scleron.generate(..., report=) or to build_sources: it tells
    cache_hit, times (derive, unroll, render, compile) and functions {name: (statements, ops)}."""
    return _pipeline().Report(name, nv)


def build_sources(model, name, report, **variant):
    """(files {file name: text}, report) of scleron's derive + unroll + render, nothing written
    or compiled. variant: method=, mass_matrix= (a variant fails on a scleron without them)."""
    pipeline = _pipeline()
    try:
        files, report, _ = pipeline.build_sources(model, name, report=report, **variant)
    except TypeError:
        if variant:          # an older scleron without the variant options: fail, do not time the default
            raise
        files, report, _ = pipeline.build_sources(model, name)
    return files, report


def write_sources(files, folder):
    """Writes build_sources' files into an existing folder."""
    _pipeline().write_sources(files, folder)


def default_mass_form(model):
    """'unrolled' or 'loop': the mass-matrix form scleron's default (mass_matrix="auto") picks
    for a scleron Model (by its nonzero entries of M: pipeline.mass_matrix_entries)."""
    return _pipeline().model_mass_form(model)


def mass_loop_from_nv():
    """The nv from which the default mass matrix is the loop form (None if scleron has none)."""
    try:
        return _pipeline().MASS_LOOP_FROM_NV
    except (ImportError, AttributeError):
        return None
