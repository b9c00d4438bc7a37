import http.server
import threading
import time

import duckdb
import pytest

from shadowreplay import prometheus
from shadowreplay.dataset import glob_for
from shadowreplay.metrics import MetricsSampler, probe

VLLM_TEXT = """\
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="tiny"} 3.0
vllm:num_requests_waiting{engine="0",model_name="tiny"} 7.0
vllm:kv_cache_usage_perc{engine="0",model_name="tiny"} 0.25
vllm:time_to_first_token_seconds_bucket{le="0.001",model_name="tiny"} 0.0
vllm:time_to_first_token_seconds_sum{model_name="tiny"} 12.5
vllm:weird{path="a \\"quoted\\" value"} +Inf
garbage line without value
"""


def test_parse_vllm_metrics():
    samples = prometheus.parse(VLLM_TEXT)
    by_name = {s.metric: s for s in samples}
    assert by_name["vllm:num_requests_running"].value == 3.0
    assert by_name["vllm:num_requests_running"].labels == {"engine": "0", "model_name": "tiny"}
    assert by_name["vllm:num_requests_waiting"].value == 7.0
    assert "vllm:time_to_first_token_seconds_bucket" not in by_name
    assert by_name["vllm:weird"].labels["path"] == 'a "quoted" value'
    assert by_name["vllm:weird"].value == float("inf")
    assert len(prometheus.parse(VLLM_TEXT, keep_buckets=True)) == len(samples) + 1


def test_escaped_label_values():
    # the escapes are \\ \" and \n; an escaped backslash before an n is a backslash and a
    # letter n, not a newline
    text = r'm{a="x\\ny",b="line\nbreak",c="say \"hi\"",d="C:\\dir\\"} 1' + "\n"
    (s,) = prometheus.parse(text)
    assert s.labels["a"] == "x" + "\\" + "ny"  # backslash + n: two characters, no newline
    assert s.labels["b"] == "line\nbreak"
    assert s.labels["c"] == 'say "hi"'
    assert s.labels["d"] == "C:\\dir\\"


def test_malformed_lines_are_skipped_with_the_rest_kept():
    text = "a 1\ngarbage line\nb{x=\"1\"} 2\nc NaN\nd{le=\"1\"} x\ne_bucket{le=\"1\"} 4\n"
    assert [(s.metric, s.value, s.labels) for s in prometheus.parse(text)] == [("a", 1.0, {}), ("b", 2.0, {"x": "1"})]
    assert [s.metric for s in prometheus.parse(text, keep_buckets=True)] == ["a", "b", "e_bucket"]


def _wait_until(cond, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.005)


@pytest.fixture
def metrics_server():
    state = {"running": 0, "hits": 0, "cond": threading.Condition()}

    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            with state["cond"]:
                state["hits"] += 1
                state["running"] += 1
                n = state["running"]
                state["cond"].notify_all()
            body = f'vllm:num_requests_running{{model_name="m"}} {n}\n'.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/metrics", state
    srv.shutdown()


def test_sampler_writes_engine_metrics(tmp_path, metrics_server):
    url, state = metrics_server
    assert probe(url)
    sampler = MetricsSampler(url, tmp_path, interval_s=0.05).start()
    _wait_until(lambda: sampler.scrapes >= 5)
    sampler.stop()
    rows = duckdb.sql(
        f"select metric, value, labels['model_name'] as m from read_parquet('{glob_for(tmp_path, 'engine_metrics')}', hive_partitioning=true) order by ts"
    ).fetchall()
    assert len(rows) == sampler.scrapes >= 5
    values = [r[1] for r in rows]
    assert values == sorted(values)  # counter served increasing values, in scrape order
    assert {r[0] for r in rows} == {"vllm:num_requests_running"} and rows[0][2] == "m"


def test_sampler_survives_unreachable_target(tmp_path):
    assert not probe("http://127.0.0.1:9/metrics", timeout=0.5)
    sampler = MetricsSampler("http://127.0.0.1:9/metrics", tmp_path, interval_s=0.02, timeout_s=0.2).start()
    _wait_until(lambda: sampler.failures >= 3)
    sampler.stop()
    assert sampler.failures >= 3 and sampler.rows_written == 0
    assert not (tmp_path / "engine_metrics").exists()


def test_sampler_process_samples_in_a_child_and_writes_at_stop(tmp_path, metrics_server):
    """The replayer's sampler: another process (its GIL is not the sender's), which writes what it
    sampled when its stdin closes, and ignores the terminal's Ctrl-C meanwhile."""
    import os
    import signal

    from shadowreplay.metrics import SamplerProcess

    url, state = metrics_server
    sp = SamplerProcess(url, tmp_path, interval_s=0.05).start()
    assert sp.proc.pid != os.getpid()
    _wait_until(lambda: state["hits"] >= 5)
    sp.proc.send_signal(signal.SIGINT)  # as a Ctrl-C on the process group would
    _wait_until(lambda: state["hits"] >= 8)
    assert sp.proc.poll() is None
    sp.stop()
    assert sp.proc.returncode == 0
    n = duckdb.sql(f"select count(*) from read_parquet('{glob_for(tmp_path, 'engine_metrics')}', hive_partitioning=true)").fetchall()[0][0]
    assert n >= 8 and n <= state["hits"]
