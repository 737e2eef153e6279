"""t2t-serve as a client sees it, over a real socket on 127.0.0.1: the same translations, samples and scores as
the Python API, concurrent requests batched, every bad request a 400 with one message while the server keeps
serving, and SIGTERM answering the request in flight before the process exits 0."""

import json
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest
from test_end_to_end import train_reversal_workdir

import t2t_jax

pytest.importorskip("aiohttp")

LINES = ["a b c d", "e f g", "p o n m l k", "b a"]


def start_server(*args):
    """(process, base url) of a t2t-serve on a free port, once it prints its address."""
    process = subprocess.Popen(
        [sys.executable, "-m", "t2t_jax", "serve", "--port", "0", *args],
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    seen = []
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        seen.append(line)
        found = re.search(r"on (http://127\.0\.0\.1:\d+)", line)
        if found:
            return process, found.group(1)
        if not line and process.poll() is not None:
            break
    process.kill()
    raise AssertionError("the server did not start:\n" + "".join(seen))


def call(url, path, body=None, raw=None):
    """(status, JSON reply) of a GET (no body) or POST."""
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    request = urllib.request.Request(url + path, data=data, method="GET" if data is None else "POST")
    try:
        with urllib.request.urlopen(request, timeout=60) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return train_reversal_workdir(tmp_path_factory.mktemp("serve"), steps=60)


@pytest.fixture(scope="module")
def translator(workdir):
    return t2t_jax.Translator.from_workdir(workdir)


@pytest.fixture(scope="module")
def server(workdir):
    process, url = start_server("--workdir", str(workdir), "--batch-wait-ms", "300")
    yield url
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=30) == 0


def test_translate_equals_the_api_with_beam_nbest_and_stop(server, translator):
    options = {"beam": 3, "nbest": 2, "alpha": 1.0, "stop": "beam_finished"}
    status, reply = call(server, "/translate", {"src": LINES, **options})
    assert status == 200
    expected = translator.translate(LINES, **options).hypotheses
    assert [[h["text"] for h in line["hypotheses"]] for line in reply["translations"]] == [
        [h.text for h in hyps] for hyps in expected
    ]
    assert [line["score"] for line in reply["translations"]] == pytest.approx([h[0].score for h in expected], abs=1e-4)
    status, one = call(server, "/translate", {"src": LINES[0]})  # a string is one line
    assert status == 200 and one["translations"][0]["text"] == translator.translate(LINES[:1]).best[0]


def test_retire_finished_is_a_request_option_with_the_api_translations(server, translator):
    status, reply = call(server, "/translate", {"src": LINES, "beam": 2, "retire_finished": True})
    assert status == 200
    expected = translator.translate(LINES, beam=2, retire_finished=True).hypotheses
    assert [line["text"] for line in reply["translations"]] == [hyps[0].text for hyps in expected]
    assert [line["score"] for line in reply["translations"]] == pytest.approx([h[0].score for h in expected], abs=1e-4)


def test_serve_retire_finished_is_the_default_of_searches_that_do_not_set_it(workdir, translator):
    """``t2t-serve --retire-finished``: /health shows the default; a request without the key gets the API's
    retire_finished translations, one that sets false or samples decodes without it (no refusal)."""
    from t2t_jax.server import Service

    service = Service(translator, retire_finished=True)
    assert service.check_translate({"src": "a"})[1]["retire_finished"] is True
    assert service.check_translate({"src": "a", "retire_finished": False})[1]["retire_finished"] is False
    assert service.check_translate({"src": "a", "sample": True})[1]["retire_finished"] is False
    assert Service(translator).check_translate({"src": "a"})[1]["retire_finished"] is False
    process, url = start_server("--workdir", str(workdir), "--retire-finished", "--no-warmup")
    try:
        assert call(url, "/health")[1]["defaults"]["retire_finished"] is True
        status, reply = call(url, "/translate", {"src": LINES, "beam": 2})
        expected = translator.translate(LINES, beam=2, retire_finished=True).best
        assert status == 200 and [line["text"] for line in reply["translations"]] == expected
        assert call(url, "/translate", {"src": LINES[:1], "sample": True})[0] == 200
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0


def test_the_server_the_api_and_the_command_name_the_same_decoding_options():
    """Every decoding option of Translator.translate is a JSON key of the same name and a flag of the translate
    command (underscores as dashes); the server sets fit_rows itself, and batch sizing is the caller's."""
    import inspect

    from t2t_jax.cli.translate import build_parser
    from t2t_jax.server import TRANSLATE_OPTIONS

    callers_own = {"self", "texts", "progress", "fit_rows", "tokens_per_batch"}
    api = set(inspect.signature(t2t_jax.Translator.translate).parameters) - callers_own
    assert set(TRANSLATE_OPTIONS) == api
    flags = {option for action in build_parser()._actions for option in action.option_strings}
    assert {"--" + name.replace("_", "-") for name in api} <= flags


def test_sampling_is_the_api_sampling_for_the_same_seed(server, translator):
    body = {"src": LINES, "sample": True, "nbest": 3, "temperature": 1.5, "top_k": 5, "seed": 7}
    status, reply = call(server, "/translate", body)
    assert status == 200
    expected = translator.translate(LINES, sample=True, nbest=3, temperature=1.5, top_k=5, seed=7).hypotheses
    assert [[h["text"] for h in line["hypotheses"]] for line in reply["translations"]] == [
        [h.text for h in hyps] for hyps in expected
    ]
    again = call(server, "/translate", body)[1]
    assert again == reply  # reproducible


def test_score_equals_score_pairs(server, translator):
    targets = ["D C B A", "G F E", "K L M N O P", "A B"]
    status, reply = call(server, "/score", {"src": LINES, "tgt": targets, "per_token": True})
    assert status == 200
    expected = translator.score_pairs(LINES, targets, per_token=True)
    for got, want in zip(reply["scores"], expected):
        assert got["tokens"] == want.tokens
        assert got["total"] == pytest.approx(want.total, abs=1e-4)
        assert got["normalized"] == pytest.approx(want.normalized, abs=1e-4)
        assert got["per_token"] == pytest.approx(want.per_token, abs=1e-4)


def test_concurrent_requests_are_batched_and_each_gets_its_own_lines(server, translator):
    before = call(server, "/health")[1]
    sentences = [" ".join("abcdefgh"[i : i + 3 + i % 3]) for i in range(8)]
    replies = [None] * len(sentences)

    def client(i):
        replies[i] = call(server, "/translate", {"src": sentences[i]})

    threads = [threading.Thread(target=client, args=(i,)) for i in range(len(sentences))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert [r[1]["translations"][0]["text"] for r in replies] == translator.translate(sentences).best
    after = call(server, "/health")[1]
    assert after["requests"] - before["requests"] == len(sentences)
    assert after["batches"] - before["batches"] < len(sentences)  # sent together, decoded together


def test_a_lone_client_sending_again_does_not_wait_for_others(server):
    """The server's batch window here is 300 ms (``--batch-wait-ms``): the first of a client's requests after a
    quiet spell waits it out for others sent together; the ones that follow the answer at once go straight in."""
    assert call(server, "/translate", {"src": "a b c"})[0] == 200  # its shape compiled, if it was not
    time.sleep(0.2)  # quiet: the next request is a first one
    began = time.perf_counter()
    for _ in range(6):
        assert call(server, "/translate", {"src": "a b c"})[0] == 200
    assert time.perf_counter() - began < 0.3 + 5 * 0.15  # one window, not six (6 x 0.3 s = 1.8 s)


def test_clients_that_join_later_decode_with_the_first_ones_instead_of_taking_turns():
    """Four clients, then four more that arrive while the first batch decodes (a 50 ms stand-in decoder, in the
    service without HTTP; each client comes back 5 ms after its answer, past the 2 ms batch window): once the late
    ones have queued behind the first batch, the next batch waits for the answered clients too, and the eight
    decode together rather than as two groups of four taking turns."""
    import asyncio
    from types import SimpleNamespace

    from t2t_jax.decode.translate import Hypothesis
    from t2t_jax.server import Limits, Service

    class SlowTranslator:
        model = SimpleNamespace(cfg=SimpleNamespace(max_len=64))

        def translate(self, lines, **options):
            time.sleep(0.05)
            return SimpleNamespace(hypotheses=[[Hypothesis(line.upper(), 0.0)] for line in lines])

    async def run():
        service = Service(SlowTranslator(), Limits(batch_wait=0.002, regroup_wait=0.010))
        await service.start()
        answers = []

        async def client(number, requests):
            for request in range(requests):
                answers.append((await service.submit("translate", [f"c{number} r{request}"], {}))[0]["text"])
                await asyncio.sleep(0.005)  # the way back over the network: longer than the 2 ms batch window

        first = [asyncio.create_task(client(number, 12)) for number in range(4)]
        await asyncio.sleep(0.02)  # the first four are decoding
        later = [asyncio.create_task(client(number, 10)) for number in range(4, 8)]
        await asyncio.gather(*first, *later)
        await service.stop()
        return service, answers

    service, answers = asyncio.run(run())
    assert sorted(answers) == sorted(f"C{c} R{r}" for c in range(8) for r in range(12 if c < 4 else 10))
    assert service.requests == 88
    assert service.batches <= 16  # taking turns: 2 + 2 x 10 batches of four; together: 2 + 10 of eight, + a tail


@pytest.mark.parametrize(
    "body, fragment",
    [
        (b'{"src": "a b', "not JSON"),
        (b"[1, 2]", "must be a JSON object"),
        (b'{"text": "a b"}', "unknown key 'text'"),
        (b'{"beam": 2}', "missing key 'src'"),
        (b'{"src": 5}', "'src' must be a string or a list of strings"),
        (b'{"src": "a", "beam": "4"}', "'beam' must be int"),
        (b'{"src": "a", "beam": 2.5}', "'beam' must be int"),
        (b'{"src": "a", "sample": 1}', "'sample' must be bool"),
        (b'{"src": "a", "alpha": true}', "'alpha' must be a number"),
        (b'{"src": ""}', "'src' line 1 is empty"),
        (b'{"src": ["a", "  "]}', "'src' line 2 is empty"),
        (b'{"src": []}', "has 0 lines"),
        (json.dumps({"src": ["a"] * 65}).encode(), "has 65 lines; a request takes 1 to 64"),
        (json.dumps({"src": "a" * 2001}).encode(), "2,001 characters"),
        (json.dumps({"src": " ".join("abcdefgh" * 10)}).encode(), "more than the model's max_len"),
        (b'{"src": "a", "beam": 0}', "beam 0: need beam >= 1"),
        (b'{"src": "a", "beam": 2, "nbest": 3}', "nbest 3: need 1 <= nbest <= beam"),
        (b'{"src": "a", "sample": true, "top_p": 0}', "top_p 0.0: need 0 < top_p <= 1"),
        (b'{"src": "a", "sample": true, "temperature": -1}', "temperature -1.0: need >= 0"),
        (b'{"src": "a", "retire_finished": 1}', "'retire_finished' must be bool"),
        (b'{"src": "a", "stop": 1}', "'stop' must be a string"),
        (b'{"src": "a", "stop": "early"}', "stop 'early': beam search stops by one of exact, beam_finished"),
        (b'{"src": "a", "sample": true, "retire_finished": true}', "retire_finished decodes one model"),
    ],
    ids=lambda value: None if isinstance(value, bytes) else value[:40],
)
def test_bad_translate_requests_get_400_and_the_server_keeps_serving(server, body, fragment):
    status, reply = call(server, "/translate", raw=body)
    assert status == 400 and fragment in reply["error"], reply
    assert call(server, "/translate", {"src": "a b"})[0] == 200


def test_bad_score_requests_and_unknown_routes(server):
    status, reply = call(server, "/score", {"src": ["a", "b"], "tgt": ["A"]})
    assert status == 400 and "2 src lines but 1 tgt lines" in reply["error"]
    status, reply = call(server, "/score", {"src": ["a"]})
    assert status == 400 and "missing key 'tgt'" in reply["error"]
    assert call(server, "/nowhere", {"src": "a"})[0] == 404
    assert call(server, "/translate")[0] == 405  # GET
    assert call(server, "/health")[1]["status"] == "ok"


def test_sigterm_answers_the_request_in_flight_then_exits_0(workdir, translator):
    """An ensemble of the model with itself (its translations equal the model's), stopped while a request waits
    in its batch window."""
    process, url = start_server("--ensemble", str(workdir), str(workdir), "--batch-wait-ms", "1500", "--no-warmup")
    try:
        reply = []
        client = threading.Thread(target=lambda: reply.append(call(url, "/translate", {"src": LINES})))
        client.start()
        time.sleep(0.5)
        process.send_signal(signal.SIGTERM)
        client.join(timeout=60)
        assert reply and reply[0][0] == 200
        assert [line["text"] for line in reply[0][1]["translations"]] == translator.translate(LINES).best
        assert process.wait(timeout=30) == 0
        assert "stopped after 1 requests in 1 batches" in process.stderr.read()
    finally:
        process.kill()


def test_serve_usage_errors_exit_2(workdir):
    for args in ([], ["--workdir", str(workdir), "--ensemble", str(workdir)], ["--workdir", "w", "--max-lines", "0"]):
        result = subprocess.run([sys.executable, "-m", "t2t_jax", "serve", *args], capture_output=True, text=True)
        assert result.returncode == 2 and result.stderr.startswith("error:"), result.stderr
