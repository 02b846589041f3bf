"""BM25 recomputed offline (for the k1 / b / title-weight sweep of ``quality_sweep``).

tantivy fixes BM25's ``k1 = 1.2`` and ``b = 0.75``; to see what other values would buy,
this scores the same analysed terms (remy's analyser) with any ``k1``/``b`` and an extra
weight on the heading path (the title, for BEIR documents): BM25F-style, the heading
terms count ``title_weight`` times in the term frequency and in the length. With
``k1=1.2, b=0.75, title_weight=1`` it reproduces tantivy's ranking up to tantivy's
quantised length norms (checked by the sweep: the nDCG@10 of both is printed).
"""

from __future__ import annotations

from collections import Counter

import numpy as np
from scipy import sparse

from benchmarks.sweep_data import SweepData


class Bm25Matrix:
    """Term frequencies of every chunk's body and heading, as sparse matrices."""

    def __init__(self, texts: list[str]) -> None:
        from remy_retriever.text.analysis import analyze

        vocab: dict[str, int] = {}
        rows = {"body": ([], [], []), "head": ([], [], [])}
        for i, text in enumerate(texts):
            head, sep, body = text.partition("\n\n")
            if not sep:
                head, body = "", text
            for part, words in (("head", analyze(head)), ("body", analyze(body))):
                r, c, v = rows[part]
                for term, n in Counter(words).items():
                    r.append(i)
                    c.append(vocab.setdefault(term, len(vocab)))
                    v.append(n)
        shape = (len(texts), len(vocab))
        self.vocab = vocab
        self.body = sparse.csc_matrix(
            (rows["body"][2], (rows["body"][0], rows["body"][1])), shape=shape, dtype=np.float64
        )
        self.head = sparse.csc_matrix(
            (rows["head"][2], (rows["head"][0], rows["head"][1])), shape=shape, dtype=np.float64
        )
        self.body_len = np.asarray(self.body.sum(axis=1)).ravel()
        self.head_len = np.asarray(self.head.sum(axis=1)).ravel()
        both = (self.body + self.head).tocsc()
        self.df = np.diff(both.indptr)
        self.n = len(texts)

    def scores(
        self, query: str, *, k1: float, b: float, title_weight: float = 1.0
    ) -> dict[int, float]:
        from remy_retriever.text.analysis import analyze

        counts = Counter(t for t in analyze(query) if t in self.vocab)
        if not counts:
            return {}
        dl = self.body_len + title_weight * self.head_len
        avg = dl.mean()
        norm = k1 * (1 - b + b * dl / avg)
        total: dict[int, float] = {}
        for term, qtf in counts.items():
            j = self.vocab[term]
            idf = np.log(1 + (self.n - self.df[j] + 0.5) / (self.df[j] + 0.5))
            col_b = self.body[:, j]
            col_h = self.head[:, j]
            tf = (col_b + title_weight * col_h).tocoo()
            for i, f in zip(tf.row.tolist(), tf.data.tolist()):
                total[i] = total.get(i, 0.0) + qtf * idf * f * (k1 + 1) / (f + norm[i])
        return total


def with_bm25(data: SweepData, texts: list[str], **params: float) -> SweepData:
    """A copy of ``data`` whose lexical scores are this BM25's."""
    import dataclasses

    m = Bm25Matrix(texts)
    bm = [m.scores(t, **params) for t in data.texts]  # type: ignore[arg-type]
    return dataclasses.replace(data, bm25=bm)
