"""replayer/model_check.py: which requests a target would refuse for their model, from its /v1/models."""

from __future__ import annotations

from shadowreplay.replayer.body import BodyOptions
from shadowreplay.replayer.plan import build_plan
from shadowreplay.replayer.model_check import model_warnings
from shadowreplay.replayer.routes import parse_route, parse_target
from tests.replayer_helpers import chat_row, write_recording


def _plan(tmp_path, rows, model_map=None, routes=()):
    from shadowreplay.replayer import schedule

    write_recording(tmp_path / "rec", rows)
    rts = [parse_route(r) for r in routes]
    sel = schedule.select(str(tmp_path / "rec"), schedule.Filters(None, None, None, None, 0, False), [r.predicate for r in rts])
    return build_plan(sel.table, schedule.offsets_ns(sel.table, 1.0), parse_target("http://127.0.0.1:9"), rts,
                      BodyOptions(model_map or {}, False), {})


def test_unserved_models_are_named_with_counts_and_a_mapping(tmp_path):
    plan = _plan(tmp_path, [chat_row(i, 0.1 * i) for i in range(3)] + [chat_row(3, 0.4, model="other")])
    (w,) = model_warnings(plan, lister=lambda url: ["tiny"])
    assert w.startswith("http://127.0.0.1:9 serves tiny, not prod-model (3 requests), other (1 requests)")
    assert w.endswith("--model-map other=tiny --model-map prod-model=tiny")


def test_mapped_models_and_silent_targets_give_no_warning(tmp_path):
    rows = [chat_row(i, 0.1 * i) for i in range(3)]
    assert model_warnings(_plan(tmp_path, rows, {"prod-model": "tiny"}), lister=lambda url: ["tiny"]) == []
    assert model_warnings(_plan(tmp_path, rows), lister=lambda url: None) == []


def test_each_route_target_is_asked_for_its_own_requests(tmp_path):
    rows = [chat_row(0, 0.0, client="a"), chat_row(1, 0.1, client="b", model="big")]
    plan = _plan(tmp_path, rows, routes=["client_id = 'b'=http://127.0.0.1:10"])
    served = {"http://127.0.0.1:9": ["prod-model"], "http://127.0.0.1:10": ["small", "tiny"]}
    (w,) = model_warnings(plan, lister=served.get)
    assert w.startswith("http://127.0.0.1:10 serves small, tiny, not big (1 requests)")
    assert "--model-map" not in w  # two models served: no single mapping to suggest


def test_a_real_server_without_the_endpoint_is_not_judged():
    from shadowreplay.replayer.model_check import served_models

    assert served_models("http://127.0.0.1:9", timeout=0.5) is None  # nothing listens on the discard port
