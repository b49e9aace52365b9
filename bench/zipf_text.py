"""Text of words drawn from a Zipf vocabulary (w0 the most frequent, then w1, ...), as
bench/fts_candidates draws it: what the full-text benchmarks index. Seeded: the same runs give the
same documents."""
import random


class ZipfText:
    def __init__(self, vocab=20000, seed=54):
        self.vocab = vocab
        self.rng = random.Random(seed)
        self.words = [f"w{i}" for i in range(vocab)]
        self.cum = []
        total = 0.0
        for i in range(vocab):
            total += 1.0 / (i + 1)
            self.cum.append(total)

    def text(self, n):
        """`n` words, space-separated."""
        return " ".join(self.rng.choices(self.words, cum_weights=self.cum, k=n))
