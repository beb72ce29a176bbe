"""The Ray details askdocs reads, pinned: a Ray upgrade that moves them fails
here, loudly, instead of silently changing behaviour.

- deployments/generator.py checks its engine's slots against
  `serve.get_replica_context()._deployment_config.max_ongoing_requests` (private:
  Ray has no public way to read it inside a replica);
- serve_app/handles.py takes Retry-After from `BackPressureError.retry_after_s`,
  a public (alpha) property; pinned because the error crosses process
  boundaries pickled, and the property must survive that.
"""
from __future__ import annotations

import dataclasses
import pickle

from ray.serve.context import ReplicaContext
from ray.serve.exceptions import BackPressureError

from serve_app.handles import translate


def test_back_pressure_error_keeps_its_public_retry_after_across_pickling() -> None:
    error = pickle.loads(pickle.dumps(BackPressureError(num_queued_requests=5, max_queued_requests=4,
                                                        status_code=503, retry_after_s=7.5)))
    assert error.retry_after_s == 7.5
    busy = translate(error)
    assert type(busy).__name__ == "Busy" and busy.retry_after_s == 7.5


def test_back_pressure_error_without_retry_after_gives_busy_without_one() -> None:
    busy = translate(pickle.loads(pickle.dumps(BackPressureError(num_queued_requests=1, max_queued_requests=1))))
    assert type(busy).__name__ == "Busy" and busy.retry_after_s is None


def test_replica_context_still_carries_the_deployment_config() -> None:
    fields = {f.name: f for f in dataclasses.fields(ReplicaContext)}
    assert "_deployment_config" in fields
    from ray.serve._private.config import DeploymentConfig

    assert DeploymentConfig(max_ongoing_requests=3).max_ongoing_requests == 3
