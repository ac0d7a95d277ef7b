"""Throughput benchmarks, one module per ``python -m benchmarks.harness --what ...`` (the CLI: ``__main__``).

* ``env``: VecEnv seat-steps/s with random bots, and the fight-skip check (the cost of a fight vs a non-fight step,
  and of plain ``jax.vmap(env.step)`` with and without the env's vmap rule);
* ``combat``: fights/s of the combat alone, and the env, A/B against a baseline git revision's combat;
* ``render``: frames/s of the renderer packed vs unpacked, env seat-steps/s with pixel vs vector observations;
* ``train``: end-to-end training seat-steps/s per preset vs the env alone, and gymnax CartPole vs PureJaxRL;
* ``sweep``: a vmapped sweep of R runs vs R separate runs, and vs a sweep without shared fight branches;
* ``timing``: the shared helpers (default sizes per backend, compiling with progress, best-of-N timing).
"""
