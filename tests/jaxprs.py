"""Reading traced programs in tests."""

from __future__ import annotations

import jax


def cond_count(jaxpr) -> int:
    """``cond`` equations in a jaxpr and all its sub-jaxprs (a vmapped cond whose predicate is batched
    becomes a select and is not counted). ``jax.lax.platform_dependent``'s conds (``branches_platforms`` set:
    one branch per platform, chosen when the program is lowered) are not decisions at run time and not
    counted; their branches are searched."""
    count = 0
    for eqn in jaxpr.eqns:
        count += eqn.primitive.name == "cond" and not eqn.params.get("branches_platforms")
        for sub in jax.extend.core.jaxprs_in_params(eqn.params):
            count += cond_count(sub)
    return count
