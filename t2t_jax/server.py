"""A translation server: one loaded, compiled model behind an HTTP JSON endpoint (aiohttp).

    POST /translate  {"src": "A man rides a bike." | [lines], "beam": 4, "alpha": 0.6, "nbest": 1,
                      "sample": false, "temperature": 1.0, "top_k": 0, "top_p": 1.0, "seed": 0,
                      "retire_finished": false, "stop": "exact"}
                  -> {"translations": [{"text": best, "score": s, "hypotheses": [{"text", "score"} x nbest]}]}
    POST /score      {"src": [lines], "tgt": [lines], "per_token": false}
                  -> {"scores": [{"total", "normalized", "tokens"(, "per_token")}]}
    GET  /health  -> {"status": "ok", "model": ..., "requests": n, "batches": m, "waiting": k}

The option names and defaults are ``Translator.translate``'s (and the command's flags). Requests that arrive
while the model is busy, or within ``batch_wait`` of each other, are decoded as one batch when their options
agree (sampling requests decode alone: their draws are keyed by line number within the request, so a request
samples what the command samples for the same lines and seed). Bad input gets a 400 with one message; the
server keeps serving. SIGTERM / SIGINT stop it after the requests in flight are answered.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import inspect
import json
import re
import signal

from aiohttp import web

from t2t_jax.api import Translator
from t2t_jax.decode.decoder import check_beam, check_sampling
from t2t_jax.decode.translate import check_retire_finished
from t2t_jax.errors import T2TError

# Translator.translate's decoding options: the JSON keys and their types (defaults read off its signature).
TRANSLATE_OPTIONS = {
    "beam": int,
    "alpha": float,
    "nbest": int,
    "sample": bool,
    "temperature": float,
    "top_k": int,
    "top_p": float,
    "seed": int,
    "retire_finished": bool,
    "stop": str,
}
SCORE_OPTIONS = {"per_token": bool}


@dataclasses.dataclass(frozen=True)
class Limits:
    """What one request may ask for, and how long the batcher waits for more requests to join a batch."""

    max_lines: int = 64
    max_chars: int = 2000  # per line
    batch_wait: float = 0.002  # seconds a request waits for others sent with it
    regroup_wait: float = 0.010  # seconds the next batch waits for the clients the last one answered


class RequestError(T2TError):
    """A request the server refuses (HTTP 400) with this message."""


def option_defaults() -> dict:
    """TRANSLATE_OPTIONS' defaults, as ``Translator.translate`` declares them."""
    parameters = inspect.signature(Translator.translate).parameters
    return {name: parameters[name].default for name in TRANSLATE_OPTIONS}


def _typed(body: dict, allowed: dict, defaults: dict) -> dict:
    """``defaults`` updated by the option keys of ``body`` (an unknown key or a wrong type is refused)."""
    options = dict(defaults)
    for key, value in body.items():
        if key in ("src", "tgt"):
            continue
        kind = allowed.get(key)
        if kind is None:
            known = ", ".join(["src", *(["tgt"] if "per_token" in allowed else []), *allowed])
            raise RequestError(f"unknown key {key!r}; known: {known}")
        if kind in (bool, str):
            fits = isinstance(value, kind)
        else:  # a float option takes an integer too; JSON's true / false are not numbers here
            fits = isinstance(value, (int, float) if kind is float else int) and not isinstance(value, bool)
        if not fits:
            what = {float: "a number", str: "a string"}.get(kind, kind.__name__)
            raise RequestError(f"{key!r} must be {what}, got {json.dumps(value)}")
        options[key] = kind(value)
    return options


class Service:
    """The request logic without HTTP: checks a request body, queues it, batches what is queued together."""

    def __init__(self, translator: Translator, limits: Limits = Limits(), *, retire_finished: bool = False):
        """``retire_finished``: the default of requests that do not set it (sampling requests excepted): a
        server runs long enough for the staged decoder's extra programs to pay (docs/decoding.md, "Serving")."""
        self.translator = translator
        self.limits = limits
        cfg = translator.model.cfg
        self.ensemble = isinstance(cfg, tuple)
        check_retire_finished(retire_finished, ensemble=self.ensemble, sampling=False)
        self.defaults = {**option_defaults(), "retire_finished": retire_finished}
        self.max_tokens = min(c.max_len for c in cfg) if self.ensemble else cfg.max_len
        self.requests = 0
        self.batches = 0
        self._queue: asyncio.Queue | None = None
        self._worker: asyncio.Task | None = None
        self._executor = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="t2t-serve")

    # --- checking requests -------------------------------------------------------------------------------
    def _lines(self, body: dict, key: str) -> list[str]:
        if key not in body:
            raise RequestError(f"missing key {key!r}: a string or a list of strings")
        value = body[key]
        lines = [value] if isinstance(value, str) else value
        if not isinstance(lines, list) or not all(isinstance(line, str) for line in lines):
            raise RequestError(f"{key!r} must be a string or a list of strings")
        if not 1 <= len(lines) <= self.limits.max_lines:
            raise RequestError(f"{key!r} has {len(lines)} lines; a request takes 1 to {self.limits.max_lines}")
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                raise RequestError(f"{key!r} line {number} is empty")
            if len(line) > self.limits.max_chars:
                raise RequestError(
                    f"{key!r} line {number} has {len(line):,} characters; the limit is {self.limits.max_chars:,}"
                )
            if "\n" in line or "\r" in line:
                raise RequestError(f"{key!r} line {number} contains a line break: send lines as a list")
        lengths = [len(ids) for ids in self.translator.model.tokenizer.encode_batch(lines)]
        for number, length in enumerate(lengths, start=1):
            if length > self.max_tokens:
                raise RequestError(
                    f"{key!r} line {number} has {length} tokens (EOS included), more than the model's max_len "
                    f"{self.max_tokens}"
                )
        return lines

    def check_translate(self, body) -> tuple[list[str], dict]:
        if not isinstance(body, dict):
            raise RequestError("the body must be a JSON object")
        options = _typed(body, TRANSLATE_OPTIONS, self.defaults)
        if options["sample"] and "retire_finished" not in body:  # the server's default is for searches
            options["retire_finished"] = False
        lines = self._lines(body, "src")
        try:
            if options["sample"]:
                check_sampling(options["temperature"], options["top_k"], options["top_p"])
                check_beam(options["nbest"], options["nbest"])
            else:
                check_beam(options["beam"], options["nbest"], options["stop"])
            check_retire_finished(options["retire_finished"], ensemble=self.ensemble, sampling=options["sample"])
        except T2TError as error:  # the command's message names its flags (--top-k): name the JSON keys (top_k)
            message = re.sub(r"--([a-z-]+)", lambda flag: flag.group(1).replace("-", "_"), str(error))
            raise RequestError(message) from None
        if options["sample"] and self.ensemble:
            raise RequestError("sampling draws from one model: this server decodes an ensemble")
        return lines, options

    def check_score(self, body) -> tuple[list[str], list[str], dict]:
        if not isinstance(body, dict):
            raise RequestError("the body must be a JSON object")
        if self.ensemble:
            raise RequestError("scoring reads one model: this server decodes an ensemble")
        options = _typed(body, SCORE_OPTIONS, {"per_token": False})
        sources, targets = self._lines(body, "src"), self._lines(body, "tgt")
        if len(sources) != len(targets):
            raise RequestError(f"{len(sources)} src lines but {len(targets)} tgt lines: pairs must be line-aligned")
        return sources, targets, options

    # --- batching ----------------------------------------------------------------------------------------
    async def start(self) -> None:
        self._queue = asyncio.Queue()
        self._worker = asyncio.create_task(self._work())

    async def stop(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
            await asyncio.gather(self._worker, return_exceptions=True)
        self._executor.shutdown(wait=True)

    async def submit(self, kind: str, payload, options: dict):
        """The result for this request's lines, decoded with whatever joins it."""
        future = asyncio.get_running_loop().create_future()
        self.requests += 1
        await self._queue.put((kind, payload, options, future))
        return await future

    async def _work(self) -> None:
        loop = asyncio.get_running_loop()
        answered, answered_at = 0, -1.0  # the requests of the last round, and when they were answered
        waited = 0  # the requests that arrived while it decoded
        while True:
            jobs = [await self._queue.get()]
            # The clients just answered usually send again at once: wait (up to regroup_wait) for as many of
            # them to be back, beside those that arrived during the last round, so that a steady set of clients
            # keeps decoding together instead of splitting into groups that take turns.
            returning = loop.time() - answered_at < self.limits.regroup_wait * 5
            expected = answered + waited if returning else 1
            deadline = loop.time() + max(self.limits.batch_wait, self.limits.regroup_wait if expected > 1 else 0)
            # Requests sent together arrive together: wait batch_wait for them, unless this is a lone client
            # sending again (one request expected: the wait would be pure latency).
            if self.limits.batch_wait > 0 and not (returning and expected == 1):
                await asyncio.sleep(self.limits.batch_wait)
            while True:
                while not self._queue.empty():
                    jobs.append(self._queue.get_nowait())
                if len(jobs) >= expected or loop.time() >= deadline:
                    break
                await asyncio.sleep(0.0005)
            for group in _groups(jobs):
                self.batches += 1
                try:
                    results = await loop.run_in_executor(self._executor, self._run, group)
                except Exception as error:  # one batch's failure is its requests' 500, not the server's end
                    for job in group:
                        if not job[3].done():
                            job[3].set_exception(error)
                    continue
                for job, result in zip(group, results):
                    if not job[3].done():  # a client that went away
                        job[3].set_result(result)
            answered, answered_at, waited = len(jobs), loop.time(), self._queue.qsize()

    def _run(self, group) -> list:
        """Decode one group (same kind and options) as one call; its results split back per request."""
        kind, _, options, _ = group[0]
        if kind == "translate":
            lines = [line for job in group for line in job[1]]
            hypotheses = self.translator.translate(lines, **options, fit_rows=True).hypotheses
            outputs = [
                {
                    "text": hyps[0].text,
                    "score": hyps[0].score,
                    "hypotheses": [{"text": h.text, "score": h.score} for h in hyps],
                }
                for hyps in hypotheses
            ]
        else:
            sources = [line for job in group for line in job[1][0]]
            targets = [line for job in group for line in job[1][1]]
            scores = self.translator.score_pairs(sources, targets, per_token=options["per_token"])
            outputs = [_score_json(score, options["per_token"]) for score in scores]
        results, start = [], 0
        for job in group:
            count = len(job[1]) if kind == "translate" else len(job[1][0])
            results.append(outputs[start : start + count])
            start += count
        return results


def _score_json(score, per_token: bool) -> dict:
    out = {"total": score.total, "normalized": score.normalized, "tokens": score.tokens}
    if per_token:
        out["per_token"] = score.per_token
    return out


def _groups(jobs) -> list[list]:
    """Jobs that can decode as one call: same kind and options; a sampling request alone."""
    groups: dict = {}
    for number, job in enumerate(jobs):
        kind, _, options, _ = job
        key = (kind, number) if options.get("sample") else (kind, tuple(sorted(options.items())))
        groups.setdefault(key, []).append(job)
    return list(groups.values())


# --- HTTP ----------------------------------------------------------------------------------------------------
async def _body(request: web.Request):
    try:
        return json.loads(await request.read())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise RequestError(f"the body is not JSON: {error}") from None


@web.middleware
async def _json_errors(request, handler):
    """Every failure answered as {"error": message}: 400 for a refused request, 404/405/413 as aiohttp finds
    them, 500 (logged) for anything unexpected."""
    try:
        return await handler(request)
    except RequestError as error:
        return web.json_response({"error": str(error)}, status=400)
    except web.HTTPException as error:
        if error.status < 400:
            raise
        return web.json_response({"error": error.reason}, status=error.status)
    except Exception as error:
        request.app["log"](f"error: {type(error).__name__}: {error} (answered 500)")
        return web.json_response({"error": f"internal error: {type(error).__name__}"}, status=500)


def build_app(service: Service, *, describe: str = "", log=print) -> web.Application:
    """The aiohttp application serving ``service`` (its batcher runs while the application does)."""
    app = web.Application(middlewares=[_json_errors])
    app["log"] = log

    async def translate(request):
        lines, options = service.check_translate(await _body(request))
        return web.json_response({"translations": await service.submit("translate", lines, options)})

    async def score(request):
        sources, targets, options = service.check_score(await _body(request))
        return web.json_response({"scores": await service.submit("score", (sources, targets), options)})

    async def health(request):
        waiting = service._queue.qsize() if service._queue is not None else 0
        return web.json_response(
            {
                "status": "ok",
                "model": describe,
                "requests": service.requests,
                "batches": service.batches,
                "waiting": waiting,
                "defaults": service.defaults,
            }
        )

    async def lifetime(app):
        await service.start()
        yield
        await service.stop()

    app.router.add_post("/translate", translate)
    app.router.add_post("/score", score)
    app.router.add_get("/health", health)
    app.cleanup_ctx.append(lifetime)
    return app


def warm_up(service: Service, rows=(1, 2, 4, 8), words=(5, 12, 28, 60)) -> None:
    """Compile the default search for the batches that requests of a few lines make: 1 to 8 rows of each
    length bucket a sentence of ``words`` words falls in (the first requests would otherwise wait for their
    compilation; the workdir's compilation cache keeps the programs for the next start)."""
    for count in rows:
        for length in words:
            if length < service.max_tokens:
                service.translator.translate(["a " * length] * count, **service.defaults, fit_rows=True)


def serve(service: Service, host: str, port: int, *, describe: str = "", log=print, shutdown_timeout=60.0):
    """Serve until SIGTERM / SIGINT; the requests in flight are answered first. Logs the address (the real
    port when ``port`` is 0)."""

    async def main():
        app = build_app(service, describe=describe, log=log)
        runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=shutdown_timeout, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, host, port)
        await site.start()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        address = runner.addresses[0]
        log(f"serving {describe} on http://{address[0]}:{address[1]} (POST /translate, POST /score, GET /health)")
        await stop.wait()
        log("stopping: answering the requests in flight")
        await runner.cleanup()
        log(f"stopped after {service.requests} requests in {service.batches} batches")

    asyncio.run(main())
