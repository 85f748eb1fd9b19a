"""Audio and video metrics: ``compare_audios`` and ``compare_videos``, scored as OSWorld does.

OSWorld's ``compare_audios`` loads both files with librosa (mono, 22050 Hz), takes 20
MFCCs, scales each coefficient by its largest magnitude, aligns the two sequences with
``fastdtw`` (radius 1, cosine distance) and returns ``exp(-distance / path length)``.
The same steps are written here with numpy: librosa's STFT (2048-sample periodic Hann
window, hop 512, zero-padded centre), Slaney mel filters (128), ``power_to_db`` (top 80
dB), orthonormal DCT-II, and fastdtw's coarsen / project / windowed-DTW recursion with
its tie order. Files are decoded with libsndfile and resampled with soxr, librosa's own
libraries (PyAV's FFmpeg only where libsndfile cannot decode, as librosa then uses
audioread): the remaining differences are in ``docs/evaluators.md``.

``compare_videos`` walks both videos frame by frame, as OpenCV reads them, up to 100
frames, and compares frames by perceptual hash.
"""

from __future__ import annotations

import math
from collections.abc import Generator
from contextlib import closing
from functools import cache
from pathlib import Path
from typing import Any

import av
import numpy as np
import soundfile
import soxr
from PIL import Image

from osworld_mcp_env.errors import EvaluationError
from osworld_mcp_env.evaluators.metrics.phash import hash_distance, phash
from osworld_mcp_env.evaluators.registry import register_metric

SAMPLE_RATE = 22050
N_FFT = 2048
HOP = 512
N_MELS = 128
N_MFCC = 20
TOP_DB = 80.0


def _decode_soundfile(path: str) -> tuple[np.ndarray, int]:
    """The samples libsndfile decodes, as float32 (frames x channels), and the native rate."""
    data, rate = soundfile.read(path, dtype="float32", always_2d=True)
    return data, int(rate)


def _decode_ffmpeg(path: str) -> tuple[np.ndarray, int]:
    """FFmpeg's samples as float32 (frames x channels) at the native rate: librosa's audioread fallback."""
    chunks = []
    with av.open(path) as container:
        if not container.streams.audio:
            raise ValueError(f"{path}: no audio stream")
        stream = container.streams.audio[0]
        rate = stream.codec_context.sample_rate
        resampler = av.AudioResampler(format="fltp")
        for frame in container.decode(stream):
            chunks += [f.to_ndarray() for f in resampler.resample(frame)]
        chunks += [f.to_ndarray() for f in resampler.resample(None)]
    if not chunks:
        return np.zeros((0, 1), dtype=np.float32), rate
    return np.concatenate(chunks, axis=1).T.astype(np.float32), rate


def load_audio(path: str | Path) -> np.ndarray:
    """The file's samples as mono float32 at 22050 Hz, as ``librosa.load(path)`` returns them.

    libsndfile decodes (WAV, FLAC, Ogg, MP3...; FFmpeg where it cannot, as librosa falls
    back to audioread), channels are averaged, and soxr's HQ filter resamples to 22050 Hz,
    the result cut or zero-padded to ``ceil(n * 22050 / rate)`` samples (librosa's
    ``fix_length``). Raises ``av.FFmpegError``, OSError or ValueError on a file neither
    library can decode.
    """
    try:
        data, rate = _decode_soundfile(str(path))
    except (soundfile.LibsndfileError, RuntimeError, TypeError):
        data, rate = _decode_ffmpeg(str(path))
    mono = data.mean(axis=1, dtype=np.float32)
    if rate == SAMPLE_RATE or mono.size == 0:
        return mono
    resampled = soxr.resample(mono, rate, SAMPLE_RATE, quality="HQ").astype(np.float32)
    size = math.ceil(mono.size * SAMPLE_RATE / rate)
    return np.pad(resampled, (0, max(0, size - resampled.size)))[:size]


def _hz_to_mel(hz: np.ndarray) -> np.ndarray:
    """Slaney's mel scale: linear to 1 kHz (200/3 Hz a mel), logarithmic above."""
    linear = hz / (200.0 / 3)
    logstep = math.log(6.4) / 27.0
    return np.where(hz >= 1000.0, 15.0 + np.log(np.maximum(hz, 1e-10) / 1000.0) / logstep, linear)


def _mel_to_hz(mel: np.ndarray) -> np.ndarray:
    logstep = math.log(6.4) / 27.0
    return np.where(mel >= 15.0, 1000.0 * np.exp(logstep * (mel - 15.0)), mel * (200.0 / 3))


@cache
def _mel_basis() -> np.ndarray:
    """Librosa's ``filters.mel(sr=22050, n_fft=2048)``: 128 Slaney-normalised triangles."""
    fft_freqs = np.linspace(0, SAMPLE_RATE / 2, 1 + N_FFT // 2)
    edges = _mel_to_hz(
        np.linspace(_hz_to_mel(np.array(0.0)), _hz_to_mel(np.array(SAMPLE_RATE / 2)), N_MELS + 2)
    )
    widths = np.diff(edges)
    ramps = edges[:, None] - fft_freqs[None, :]
    lower = -ramps[:-2] / widths[:-1, None]
    upper = ramps[2:] / widths[1:, None]
    weights = np.maximum(0.0, np.minimum(lower, upper)) * (2.0 / (edges[2:] - edges[:-2]))[:, None]
    return weights.astype(np.float32)


@cache
def _dct_ortho() -> np.ndarray:
    """The first 20 rows of the orthonormal DCT-II over 128 mel bands (``scipy.fft.dct(norm="ortho")``)."""
    k = np.arange(N_MFCC)[:, None]
    basis = np.cos(np.pi * k * (2 * np.arange(N_MELS)[None, :] + 1) / (2 * N_MELS)) * math.sqrt(2.0 / N_MELS)
    basis[0] /= math.sqrt(2.0)
    return basis


def mfcc(y: np.ndarray) -> np.ndarray:
    """``librosa.feature.mfcc(y=y, sr=22050)``: 20 x frames, float32."""
    padded = np.pad(y, N_FFT // 2)
    frames = np.lib.stride_tricks.sliding_window_view(padded, N_FFT)[::HOP]
    window = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(N_FFT) / N_FFT)).astype(np.float32)
    power = np.abs(np.fft.rfft(frames * window, axis=1)) ** 2
    mel = _mel_basis() @ power.T
    db = 10.0 * np.log10(np.maximum(mel, 1e-10))
    db = np.maximum(db, db.max() - TOP_DB)
    return (_dct_ortho() @ db.astype(np.float64)).astype(np.float32)


def normalize_rows(m: np.ndarray) -> np.ndarray:
    """``librosa.util.normalize(m, axis=1)``: each row over its largest magnitude (a ~zero row kept)."""
    peak = np.abs(m).max(axis=1, keepdims=True)
    return m / np.where(peak < np.finfo(m.dtype).tiny, 1.0, peak)


Cell = tuple[int, int]


def _cosine_rows(x: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """Scipy's cosine distance of x to each row y: ``1 - x.y / sqrt(|x|^2 |y|^2)`` in [0, 2]."""
    uv = ys @ x
    return np.clip(1.0 - uv / np.sqrt((x @ x) * np.einsum("ij,ij->i", ys, ys)), 0.0, 2.0)


def _dtw(x: np.ndarray, y: np.ndarray, rows: list[tuple[int, int]]) -> tuple[float, list[Cell]]:
    """DTW restricted to ``rows[i] = (first, last)`` columns of row i; fastdtw's step order on ties.

    Each cell takes the cheapest of (up, left, diagonal), the first of equals in that
    order; the path is walked back from the last cell.
    """
    inf = math.inf
    cost: list[dict[int, float]] = []
    step: list[dict[int, int]] = []  # 0 up, 1 left, 2 diagonal
    for i, (first, last) in enumerate(rows):
        dist = _cosine_rows(x[i], y[first : last + 1])
        prev = cost[i - 1] if i else {}
        here: dict[int, float] = {}
        moves: dict[int, int] = {}
        for j in range(first, last + 1):
            d = float(dist[j - first])
            up = prev.get(j, inf) + d
            left = here.get(j - 1, inf) + d
            diag = (prev.get(j - 1, inf) if i else (0.0 if j == 0 else inf)) + d
            best, move = up, 0
            if left < best:
                best, move = left, 1
            if diag < best:
                best, move = diag, 2
            here[j] = best
            moves[j] = move
        cost.append(here)
        step.append(moves)
    i, j = len(x) - 1, len(y) - 1
    path = []
    while i >= 0 and j >= 0:
        path.append((i, j))
        move = step[i][j]
        i, j = (i - 1, j) if move == 0 else (i, j - 1) if move == 1 else (i - 1, j - 1)
    path.reverse()
    return cost[-1][len(y) - 1], path


def _expand(path: list[Cell], len_x: int, len_y: int, radius: int) -> list[tuple[int, int]]:
    """The fastdtw window: the coarse path grown by ``radius``, doubled, cut to one run of columns a row."""
    near = {
        (i + a, j + b)
        for i, j in path
        for a in range(-radius, radius + 1)
        for b in range(-radius, radius + 1)
    }
    cells = {(2 * i + a, 2 * j + b) for i, j in near for a in (0, 1) for b in (0, 1)}
    rows = []
    start = 0
    for i in range(len_x):
        first = last = None
        for j in range(start, len_y):
            if (i, j) in cells:
                first = j if first is None else first
                last = j
            elif first is not None:
                break
        if first is None or last is None:
            raise ValueError("fastdtw window has an empty row")
        rows.append((first, last))
        start = first
    return rows


def fastdtw(x: np.ndarray, y: np.ndarray, radius: int = 1) -> tuple[float, list[Cell]]:
    """``fastdtw.fastdtw(x, y, radius, dist=cosine)``: the distance and the warping path."""
    if len(x) < radius + 2 or len(y) < radius + 2:
        return _dtw(x, y, [(0, len(y) - 1)] * len(x))
    half_x = (x[: len(x) // 2 * 2 : 2] + x[1 : len(x) // 2 * 2 : 2]) / 2
    half_y = (y[: len(y) // 2 * 2 : 2] + y[1 : len(y) // 2 * 2 : 2]) / 2
    _, coarse = fastdtw(half_x, half_y, radius)
    return _dtw(x, y, _expand(coarse, len(x), len(y), radius))


def audio_similarity(y1: np.ndarray, y2: np.ndarray) -> float:
    """``exp(-d / len(path))`` of the fastdtw alignment of the two row-normalised MFCC sequences."""
    a = normalize_rows(mfcc(y1)).T.astype(np.float64)
    b = normalize_rows(mfcc(y2)).T.astype(np.float64)
    distance, path = fastdtw(a, b)
    return float(np.exp(-distance / len(path)))


def _try_load(path: Any) -> np.ndarray | None:
    try:
        return load_audio(path)
    except (av.FFmpegError, OSError, ValueError, soundfile.LibsndfileError):
        return None


@register_metric("compare_audios")
def compare_audios(result: Any, expected: Any, **options: Any) -> float:
    """Similarity in (0, 1] of the two recordings' MFCCs; identical audio is 1.

    No result is 0; an undecodable or empty result is 0 (OSWorld: 1 when the expected
    file is empty or undecodable too, but that is the task's file, an error here).
    """
    if not result or not expected:
        return 0.0
    want = _try_load(expected)
    if want is None or want.size == 0:
        raise EvaluationError(
            f"compare_audios: the expected audio {expected!r} cannot be decoded or is empty"
        )
    got = _try_load(result)
    if got is None or got.size == 0:
        return 0.0
    return audio_similarity(got, want)


def video_frames(path: Any) -> Generator[Image.Image, None, None]:
    """The first video stream's frames as RGB images, in presentation order (what OpenCV reads).

    A file FFmpeg cannot open yields no frames, as OpenCV's ``read`` fails at once.
    """
    try:
        container = av.open(str(path))
    except (av.FFmpegError, OSError):
        return
    with container:
        if not container.streams.video:
            return
        try:
            for frame in container.decode(container.streams.video[0]):
                yield frame.to_image()
        except av.FFmpegError:
            return


@register_metric("compare_videos", options=("max_frames_to_check", "threshold"))
def compare_videos(result: Any, expected: Any, **options: Any) -> float:
    """1 unless more than ``threshold`` (5) of the first ``max_frames_to_check`` (100) frame pairs differ.

    Frames differ when their perceptual hashes are more than ``threshold`` bits apart.
    When either video ends within those frames, the score is 1 only if both end there
    (same length). A missing or unreadable result has no frames (OpenCV's ``read`` fails at
    once, ``VideoCapture(None)`` included): 0. An expected video without frames is the
    task's fault: ``EvaluationError`` (OSWorld: 1 if the result has none either).
    """
    limit = int(options.get("max_frames_to_check", 100))
    threshold = int(options.get("threshold", 5))
    with closing(video_frames(result)) as got, closing(video_frames(expected)) as want:
        mismatches = 0
        for index in range(limit):
            a, b = next(got, None), next(want, None)
            if b is None and index == 0:
                raise EvaluationError(f"compare_videos: the expected video {expected!r} has no frames")
            if a is None or b is None:
                return 1.0 if a is None and b is None else 0.0
            if hash_distance(phash(a), phash(b)) > threshold:
                mismatches += 1
                if mismatches > threshold:
                    return 0.0
    return 1.0
