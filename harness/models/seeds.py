"""Trial seeds: every sampled role of a trial samples with its own seed.

A run of K trials plays each task K times. Trial 1 samples with each role's configured seed
(``roles.ROLE.seed``), so a one-trial run is exactly the run it always was; trial k > 1 samples
with a seed derived from the run's seed, the role, the role's own seed, the task and k. The
seeds of a trial are computed once, stored with its interaction (``script_json``) and read back
by ``--resume``, so a resumed trial keeps its seeds.

The batch sets a trial's seeds around its conversation (:func:`trial_seeds`, a context variable:
concurrent conversations each see their own); :meth:`harness.models.llm.RoleClient.invoke` reads
them with :func:`seed_for`. A call that asks for its own seed (a simulated user's regeneration
asks for the role's seed + its attempt) keeps that offset from the trial's seed.
"""
from __future__ import annotations

import hashlib
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Iterator, Mapping

_TRIAL_SEEDS: ContextVar[Mapping[str, int] | None] = ContextVar("deskbench_trial_seeds", default=None)


def derive_seed(run_seed: int, role: str, role_seed: int | None, task_id: str, trial: int) -> int:
    """The seed of ``role`` in trial ``trial`` (1-based) of ``task_id``: the role's own seed in
    trial 1, else a stable 31-bit hash of all five (the same on every machine and every resume)."""
    if trial == 1:
        return role_seed or 0
    key = f"{run_seed}:{role}:{role_seed or 0}:{task_id}:{trial}".encode()
    return int.from_bytes(hashlib.sha256(key).digest()[:4], "big") & 0x7FFFFFFF


def seeds_of_trial(run_seed: int, roles: Mapping[str, tuple[float, int | None]], task_id: str,
                   trial: int) -> dict[str, int]:
    """The seeds of a trial's sampled roles: ``roles`` maps a role to its (temperature, seed);
    a role at temperature 0 decodes greedily and needs none."""
    return {role: derive_seed(run_seed, role, seed, task_id, trial)
            for role, (temperature, seed) in sorted(roles.items()) if temperature > 0}


@contextmanager
def trial_seeds(seeds: Mapping[str, int] | None) -> Iterator[None]:
    """Within the block (and the tasks it starts), the roles in ``seeds`` sample with them."""
    token = _TRIAL_SEEDS.set(dict(seeds) if seeds else None)
    try:
        yield
    finally:
        _TRIAL_SEEDS.reset(token)


def seed_for(role: str, configured: int | None, requested: int | None) -> int | None:
    """The seed a call of ``role`` samples with: ``requested`` (the call's own, else None for the
    role's configured seed) moved to the current trial's seed for the role, keeping the call's
    offset from the configured seed; None: leave the call as it is (no trial seed for the role)."""
    seeds = _TRIAL_SEEDS.get()
    if not seeds or role not in seeds:
        return None
    offset = 0 if requested is None else requested - (configured or 0)
    return seeds[role] + offset
