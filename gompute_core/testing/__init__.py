"""The backend-agnostic conformance suite (a pytest plugin).

Run it against any installed backend with
``pytest --pyargs gompute_core.testing --gompute-backend=NAME``.

Modules: ``plugin`` (the pytest11 entry point: option, marker, deselection by
``BackendInfo``, fixtures), ``catalogue`` (every conformance spec;
``iter_specs()`` for ahead-of-time compilation in CI), ``kernels`` and
``kernels_params`` (the kernel functions, which are also the oracles),
``_support``/``_reduce`` (data, oracles, comparisons), ``kernels_tiers`` and
``_tiers`` (the long kernel and the reserved-name kernels of the tier tests) and
the ``test_*`` modules, one tier each (``TIER``: kinds, buffers, launch,
streams, compile, devices, threads, names). ``gompute certify NAME`` runs it
and judges the backend (:mod:`gompute_core.certify`). This package stays
import-light: nothing here is imported by ``import gompute_core``.
"""
