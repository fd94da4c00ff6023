"""What a round records of the listing and of the answers' model ids, before and after probing:
the endpoints snapshot and its drift against the last one, and what sits behind the model id
(the rules are canary.core.drift's and canary.core.served's)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

from canary.config.settings import QUANTIZATION_ORDER, ModelSettings
from canary.core.alerts import drift_audit, drift_events
from canary.core.drift import diff_snapshots, quieted, snapshot_of
from canary.core.events import Drifted, Event
from canary.core.identity import Listed
from canary.core.model import Endpoint, Exclusion, Look
from canary.core.served import served_model_changes
from canary.store import AuditRows
from canary.store.repository import Store


def record_identity(
    store: Store,
    holder: str | None,
    model: str,
    round_id: int,
    before: Mapping[str, str],
    served: Mapping[str, str],
    now: datetime,
    windows: Sequence[Exclusion] = (),
    listing: Sequence[Listed] = (),
) -> list[Drifted]:
    """What sits behind the model id: each endpoint's served model against its last one (no
    alert for an endpoint in a maintenance window)."""
    changes = quieted(served_model_changes(model, before, served), windows, listing, now)
    if not changes:
        return []
    store.record_drift(round_id, model, changes, now, holder=holder)
    return drift_events(model, changes, Look.round(round_id, now))


def record_listing(
    store: Store,
    holder: str | None,
    audit_rows: Callable[[Sequence[Event]], AuditRows],
    model: ModelSettings,
    round_id: int,
    endpoints: Sequence[Endpoint],
    now: datetime,
    windows: Sequence[Exclusion] = (),
) -> list[Drifted]:
    """The listing's snapshot and its drift. Before probing, apart from the decision (made after
    it): what the listing showed is recorded whatever the round then finds, with the audit rows
    of its alerts (none for an endpoint in a maintenance window)."""
    before = store.latest_snapshot(model.id)
    after = {e.tag: snapshot_of(e) for e in endpoints}
    price = model.max_price
    drifted = diff_snapshots(
        model.id,
        before,
        after,
        max_price=(price.prompt, price.completion) if price else None,
        min_quantization=model.min_quantization,
        capacity_floor=model.capacity_floor,
        quantization_order=QUANTIZATION_ORDER,
    )
    changes = quieted(drifted, windows, map(Listed.of, endpoints), now)
    store.record_snapshots(round_id, model.id, endpoints, now, holder=holder)
    look = Look.round(round_id, now)
    store.record_drift(
        round_id,
        model.id,
        changes,
        now,
        holder=holder,
        audit=audit_rows(drift_audit(model.id, changes, look)),
    )
    return drift_events(model.id, changes, look)
