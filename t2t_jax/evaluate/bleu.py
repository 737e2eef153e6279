"""BLEU three ways.

* Headline: sacreBLEU on detokenized, cased output, tokenize 13a, with its signature.
* "Paper BLEU" (Table 2's protocol, T2T's get_ende_bleu.sh): Moses-tokenize hypothesis and
  reference, split hyphenated compounds as ``##AT##-##AT##``, then corpus BLEU on the tokens
  with no further tokenization (multi-bleu.perl). Reads ~0.7-1.5 higher than sacreBLEU.
* "Lowercased tokenized BLEU", the protocol of published text-only Multi30k results (e.g. fairseq's
  multi-bleu on lowercased, Moses-tokenized text): lowercase, Moses-tokenize (sacremoses, escape=False),
  corpus BLEU on the tokens. Only this one compares with those papers' figures.
"""

from __future__ import annotations

import re

import sacrebleu

_COMPOUND = re.compile(r"(\S)-(\S)")


def sacre_bleu(hypotheses, references) -> dict:
    metric = sacrebleu.metrics.BLEU(tokenize="13a")
    score = metric.corpus_score(list(hypotheses), [list(references)])
    return {
        "score": score.score,
        "signature": str(metric.get_signature()),
        "bp": score.bp,
        "sys_len": score.sys_len,
        "ref_len": score.ref_len,
        "text": str(score),
    }


def chrf(hypotheses, references) -> dict:
    metric = sacrebleu.metrics.CHRF()
    score = metric.corpus_score(list(hypotheses), [list(references)])
    return {"score": score.score, "signature": str(metric.get_signature())}


def split_compounds(tokenized: str) -> str:
    """``Ost-West-Konflikt`` -> ``Ost ##AT##-##AT## West ##AT##-##AT## Konflikt`` (as the perl one-liner)."""
    return _COMPOUND.sub(r"\1 ##AT##-##AT## \2", tokenized)


def paper_tokenize(text: str, lang: str) -> str:
    from sacremoses import MosesTokenizer

    return split_compounds(MosesTokenizer(lang=lang).tokenize(text, return_str=True, escape=False))


def paper_bleu(hypotheses, references, lang: str) -> dict:
    from sacremoses import MosesTokenizer

    tokenizer = MosesTokenizer(lang=lang)
    tokenize = lambda t: split_compounds(tokenizer.tokenize(t, return_str=True, escape=False))  # noqa: E731
    hyps = [tokenize(h) for h in hypotheses]
    refs = [tokenize(r) for r in references]
    score = sacrebleu.metrics.BLEU(tokenize="none", force=True).corpus_score(hyps, [refs])
    return {
        "score": score.score,
        "protocol": f"moses-tokenized ({lang}) + ##AT## compound split, corpus BLEU on tokens (multi-bleu.perl)",
        "bp": score.bp,
    }


LOWERCASE_TOKENIZED_PROTOCOL = "lowercased, Moses-tokenized (sacremoses, escape=False), corpus BLEU on tokens"


def lowercase_tokenized_bleu(hypotheses, references, lang: str) -> dict:
    """BLEU as published text-only Multi30k results compute it (LOWERCASE_TOKENIZED_PROTOCOL)."""
    from sacremoses import MosesTokenizer

    tokenizer = MosesTokenizer(lang=lang)
    tokenize = lambda t: tokenizer.tokenize(t.lower(), return_str=True, escape=False)  # noqa: E731
    score = sacrebleu.metrics.BLEU(tokenize="none", force=True).corpus_score(
        [tokenize(h) for h in hypotheses], [[tokenize(r) for r in references]]
    )
    return {"score": score.score, "protocol": f"{LOWERCASE_TOKENIZED_PROTOCOL} ({lang})", "ref_len": score.ref_len}
