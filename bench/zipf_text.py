"""Text of words drawn from a Zipf vocabulary (w0 the most frequent, then w1, ...), as
bench/fts_candidates draws it: what the full-text benchmarks index. Seeded: the same runs give the
same documents."""
import random

# The Nouveau index the full-text benchmarks query: the two text fields (the title stored), the
# string and the number.
NOUVEAU_INDEX = """function(doc) {
  index('text', 'title', doc.title, {store: true});
  index('text', 'default', doc.body);
  index('string', 'genre', doc.genre);
  index('double', 'year', doc.year);
}"""


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

    def doc(self, i):
        """Benchmark document number `i` (~800 bytes): a title of 8 words, a body of 150, a genre
        and a year."""
        return {"_id": f"d{i:08d}", "title": self.text(8), "body": self.text(150), "genre": f"g{i % 12}",
                "year": 1900 + i % 120}
