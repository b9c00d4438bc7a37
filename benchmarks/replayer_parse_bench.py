"""Response parsing in the replayer's HTTP client (replayer/client.py `Exchange`): µs per response,
for this checkout and, interleaved, for another one (`--compare-repo`), in fresh processes.

    .venv/bin/python benchmarks/replayer_parse_bench.py --rounds 15
    .venv/bin/python benchmarks/replayer_parse_bench.py --rounds 15 --compare-repo /tmp/before

The other checkout is imported with PYTHONPATH=REPO; for a checkout of this layout (one
`shadowreplay` package whose parts are top-level folders) make `REPO/shadowreplay/<part>` links
to `REPO/<part>` first (this script does, when they are missing). Shapes are those vLLM 0.32
sends (chunk JSON as it writes it); each response's SSE body is fed as it would be read, then
finished: what the client does in its read callbacks.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PARTS = ("recorder", "anonymize", "replayer", "shadow", "analysis", "traces")

CHILD = r"""
import json, sys, time
from shadowreplay.replayer import client
Exchange = client.Exchange
shapes = json.loads(sys.stdin.read())
reps = int(sys.argv[1])
out = {}
for name, (path, reads) in shapes.items():
    reads = [r.encode("latin-1") for r in reads]
    req = f"POST {path} HTTP/1.1\r\nHost: x\r\n\r\n{{}}".encode()
    done = lambda e: None
    def one():
        ex = Exchange(0, req, done)
        if hasattr(ex, "start_stream"):
            ex.start_stream()
        else:
            ex.sse = True
        for i, r in enumerate(reads):
            ex.body(r, i + 1)
        ex.finish(10_000)
        return ex
    ex = one()
    for _ in range(200):  # warm-up
        one()
    best = []
    for _ in range(5):
        t = time.perf_counter_ns()
        for _ in range(reps):
            one()
        best.append((time.perf_counter_ns() - t) / reps / 1000)
    out[name] = {"us": min(best), "tokens": len(ex.token_ns), "usage": ex.usage is not None}
print(json.dumps(out))
"""


def _chat(words: list[str]) -> list[bytes]:
    head = '{"id":"chatcmpl-b214e62a329d4e6c","object":"chat.completion.chunk","created":1796125553,"model":"tiny-llama","choices":[{"index":0,'
    ev = [head + '"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"prompt_token_ids":null,"prompt_text":null}']
    for i, w in enumerate(words):
        fr = '"length","stop_reason":null' if i == len(words) - 1 else "null"
        ev.append(head + f'"delta":{{"content":"{w}"}},"logprobs":null,"finish_reason":{fr},"token_ids":null}}]}}')
    ev.append('{"id":"chatcmpl-b214e62a329d4e6c","object":"chat.completion.chunk","created":1796125553,"model":"tiny-llama",'
              f'"choices":[],"usage":{{"prompt_tokens":16,"total_tokens":{16 + len(words)},"completion_tokens":{len(words)}}},'
              '"system_fingerprint":"vllm-0.32.0-b0704314"}')
    return [b"data: " + e.encode() + b"\n\n" for e in ev] + [b"data: [DONE]\n\n"]


def _completion(words: list[str]) -> list[bytes]:
    head = '{"id":"cmpl-b57f4944bb46613d","object":"text_completion","created":1796125555,"model":"tiny-llama","choices":[{"index":0,'
    ev = [head + f'"text":"{w}","logprobs":null,"finish_reason":null,"stop_reason":null,"prompt_token_ids":null,"token_ids":null}}]}}'
          for w in words]
    ev.append('{"id":"cmpl-b57f4944bb46613d","object":"text_completion","created":1796125555,"model":"tiny-llama","choices":[],'
              f'"usage":{{"prompt_tokens":2,"total_tokens":{2 + len(words)},"completion_tokens":{len(words)}}},'
              '"system_fingerprint":"vllm-0.32.0-b0704314"}')
    return [b"data: " + e.encode() + b"\n\n" for e in ev] + [b"data: [DONE]\n\n"]


def _responses(words: list[str]) -> list[bytes]:
    resp = ('{"id":"resp_92ecd993bd996d2c","created_at":1796125553,"incomplete_details":%s,"instructions":null,"model":"tiny-llama",'
            '"object":"response","output":[],"status":"%s","usage":%s}')
    ev = [("response.created", '{"response":%s,"sequence_number":0,"type":"response.created"}' % (resp % ("null", "in_progress", "null"))),
          ("response.output_item.added", '{"item":{"id":"msg_9","content":[],"role":"assistant","status":"in_progress","type":"message"},'
                                         '"output_index":0,"sequence_number":2,"type":"response.output_item.added"}')]
    for i, w in enumerate(words):
        ev.append(("response.output_text.delta", f'{{"content_index":0,"delta":"{w}","item_id":"msg_9","logprobs":[],"output_index":0,'
                                                 f'"sequence_number":{i + 3},"type":"response.output_text.delta"}}'))
    usage = f'{{"input_tokens":17,"input_tokens_details":{{"cached_tokens":0}},"output_tokens":{len(words)},"total_tokens":{17 + len(words)}}}'
    ev.append(("response.completed", '{"response":%s,"sequence_number":99,"type":"response.completed"}'
               % (resp % ('{"reason":"max_output_tokens"}', "incomplete", usage))))
    return [f"event: {t}\ndata: {d}\n\n".encode() for t, d in ev]


def _messages(words: list[str]) -> list[bytes]:
    ev = [("message_start", '{"type":"message_start","message":{"id":"chatcmpl-8188","type":"message","role":"assistant","content":[],'
                            '"model":"tiny-llama","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":9,"output_tokens":0}}}'),
          ("content_block_start", '{"type":"content_block_start","content_block":{"type":"text","text":""},"index":0}')]
    for w in words:
        ev.append(("content_block_delta", f'{{"type":"content_block_delta","delta":{{"type":"text_delta","text":"{w}"}},"index":0}}'))
    ev += [("content_block_stop", '{"type":"content_block_stop","index":0}'),
           ("message_delta", f'{{"type":"message_delta","delta":{{"stop_reason":"max_tokens","stop_sequence":null}},'
                             f'"usage":{{"input_tokens":9,"output_tokens":{len(words)}}}}}'),
           ("message_stop", '{"type":"message_stop"}')]
    return [f"event: {t}\ndata: {d}\n\n".encode() for t, d in ev]


WORDS2 = ["ractice", "ye"]
WORDS64 = [f" w{i}" for i in range(64)]


def shapes() -> dict[str, tuple[str, list[str]]]:
    s = {
        "chat 2 tokens, one read": ("/v1/chat/completions", [b"".join(_chat(WORDS2))]),
        "chat 2 tokens, an event per read": ("/v1/chat/completions", _chat(WORDS2)),
        "chat 64 tokens, an event per read": ("/v1/chat/completions", _chat(WORDS64)),
        "chat 64 tokens, one read": ("/v1/chat/completions", [b"".join(_chat(WORDS64))]),
        "completions 16 tokens, an event per read": ("/v1/completions", _completion(WORDS64[:16])),
        "responses 16 tokens, an event per read": ("/v1/responses", _responses(WORDS64[:16])),
        "messages 16 tokens, an event per read": ("/v1/messages", _messages(WORDS64[:16])),
    }
    return {k: (p, [r.decode("latin-1") for r in reads]) for k, (p, reads) in s.items()}


def run(repo: Path, reps: int) -> dict:
    env = dict(os.environ)
    if repo != REPO:
        env["PYTHONPATH"] = str(repo)
    p = subprocess.run([sys.executable, "-c", CHILD, str(reps)], input=json.dumps(shapes()), capture_output=True,
                       text=True, cwd=repo, env=env, timeout=600)
    if p.returncode != 0:
        raise SystemExit(f"{repo}: {p.stderr.strip()[-2000:]}")
    return json.loads(p.stdout)


def link_parts(repo: Path) -> None:
    for part in PARTS:
        link = repo / "shadowreplay" / part
        if (repo / part).is_dir() and not link.exists():
            link.symlink_to(Path("..") / part)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--reps", type=int, default=2000)
    ap.add_argument("--compare-repo", type=Path)
    ap.add_argument("--json")
    a = ap.parse_args()
    repos = {"this": REPO}
    if a.compare_repo:
        link_parts(a.compare_repo.resolve())
        repos = {"compare": a.compare_repo.resolve(), "this": REPO}
    res: dict[str, list[dict]] = {k: [] for k in repos}
    for i in range(a.rounds):
        order = list(repos.items()) if i % 2 == 0 else list(repos.items())[::-1]  # interleaved, alternating first
        for name, repo in order:
            res[name].append(run(repo, a.reps))
    names = list(shapes())
    head = "| shape | " + " | ".join(f"{k} µs/response (tokens, usage)" for k in repos) + (" | this / compare |" if a.compare_repo else " |")
    print(head)
    print("|---" * (len(repos) + 1 + bool(a.compare_repo)) + "|")
    for s in names:
        cells, med = [], {}
        for k in repos:
            med[k] = statistics.median(r[s]["us"] for r in res[k])
            last = res[k][-1][s]
            cells.append(f"{med[k]:.2f} ({last['tokens']}, {'yes' if last['usage'] else 'no'})")
        ratio = f" | {med['this'] / med['compare']:.3f} |" if a.compare_repo else " |"
        print(f"| {s} | " + " | ".join(cells) + ratio)
    if a.json:
        Path(a.json).write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
