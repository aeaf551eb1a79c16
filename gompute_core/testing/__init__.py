"""The backend-agnostic conformance suite (a pytest plugin).

Run it against any installed backend with
``pytest --pyargs gompute_core.testing --gompute-backend=NAME``.

Modules: ``plugin`` (the pytest11 entry point: option, marker, deselection by
``BackendInfo``, fixtures), ``catalogue`` (every conformance spec;
``iter_specs()`` for ahead-of-time compilation in CI), ``kernels`` and
``kernels_params`` (the kernel functions, which are also the oracles),
``_support``/``_reduce`` (data, oracles, comparisons) and the ``test_*``
modules. This package stays import-light: nothing here is imported by
``import gompute_core``.
"""
