"""The backend-agnostic conformance suite (a pytest plugin).

Run it against any installed backend with
``pytest --pyargs gompute_core.testing --gompute-backend=NAME``.
"""
