"""BERT's uncased WordPiece tokenizer (``WordPiece``), read from the bundled model's ``tokenizer.json``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np


class WordPiece:
    """BERT's uncased tokenizer as ``tokenizer.json`` describes it for this model (BertNormalizer with lowercase
    and accent stripping, BertPreTokenizer, WordPiece with ``##`` continuations, ``[CLS] … [SEP]``), in plain
    Python: the vocabulary as one dict costs a few MB where the ``tokenizers`` library held about fifteen, and a
    sentence takes tens of microseconds, nothing beside the model's run."""

    def __init__(self, path: Path, max_tokens: int) -> None:
        spec = json.loads(path.read_text(encoding="utf-8"))
        model = spec["model"]
        self.vocab: dict[str, int] = model["vocab"]
        self.prefix: str = model["continuing_subword_prefix"]
        self.longest: int = model["max_input_chars_per_word"]
        self.unk = self.vocab[model["unk_token"]]
        self.cls, self.sep = self.vocab["[CLS]"], self.vocab["[SEP]"]
        self.max_tokens = max_tokens

    @staticmethod
    def _normalized(text: str) -> str:
        import unicodedata

        out = []
        for char in text:
            code = ord(char)
            if code in (0, 0xFFFD):
                continue
            category = unicodedata.category(char)
            if char in "\t\n\r" or category == "Zs":
                out.append(" ")
            elif category in ("Cc", "Cf"):
                continue
            elif 0x4E00 <= code <= 0x9FFF or 0x3400 <= code <= 0x4DBF or 0x20000 <= code <= 0x2A6DF or \
                    0x2A700 <= code <= 0x2B81F or 0x2B820 <= code <= 0x2CEAF or 0xF900 <= code <= 0xFAFF or \
                    0x2F800 <= code <= 0x2FA1F:
                out.append(f" {char} ")
            else:
                out.append(char)
        decomposed = unicodedata.normalize("NFD", "".join(out))
        return "".join(c for c in decomposed if unicodedata.category(c) != "Mn").lower()

    @staticmethod
    def _words(text: str) -> list[str]:
        import unicodedata

        words: list[str] = []
        current: list[str] = []
        for char in text:
            if char.isspace():
                if current:
                    words.append("".join(current))
                    current = []
            elif (char.isascii() and not char.isalnum() and char.isprintable()) or \
                    unicodedata.category(char).startswith("P"):
                if current:
                    words.append("".join(current))
                    current = []
                words.append(char)
            else:
                current.append(char)
        if current:
            words.append("".join(current))
        return words

    def _pieces(self, word: str) -> list[int]:
        if len(word) > self.longest:
            return [self.unk]
        pieces, start = [], 0
        while start < len(word):
            end = len(word)
            while end > start:
                piece = word[start:end] if start == 0 else self.prefix + word[start:end]
                found = self.vocab.get(piece)
                if found is not None:
                    pieces.append(found)
                    break
                end -= 1
            else:
                return [self.unk]
            start = end
        return pieces

    def ids(self, text: str) -> list[int]:
        """The token ids of one text: ``[CLS]``, its word pieces (cut to fit), ``[SEP]``."""
        room = self.max_tokens - 2
        out = [self.cls]
        for word in self._words(self._normalized(text)):
            out.extend(self._pieces(word))
            if len(out) > room:
                break
        return [*out[:room + 1], self.sep]

    def batch(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """Token ids and attention mask of several texts, padded with ``[PAD]`` (0) to the longest."""
        rows = [self.ids(text) for text in texts]
        width = max(len(row) for row in rows)
        ids = np.zeros((len(rows), width), dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for at, row in enumerate(rows):
            ids[at, :len(row)] = row
            mask[at, :len(row)] = 1
        return ids, mask
