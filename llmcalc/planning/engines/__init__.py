"""Inference engines' own rules, one module per engine (``--engine NAME``): what each engine
allocates (weights, KV cache, state, compute buffers, its reserve) and how fast it runs, each
rule read from the engine's source at the version named in its module and cited beside it."""
