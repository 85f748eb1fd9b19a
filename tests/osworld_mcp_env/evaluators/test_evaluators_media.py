"""compare_audios and compare_videos on recordings made here, against OSWorld's own functions.

Expected numbers come from OSWorld's code run on these exact files: ``librosa.load`` (0.11,
soundfile + soxr) + ``librosa.feature.mfcc`` + ``librosa.util.normalize`` + ``fastdtw``
with scipy's cosine for audio; ``cv2.VideoCapture`` (OpenCV 5) + ``imagehash.phash`` for
video. Ours decodes and resamples with the same libsndfile and soxr; its numpy MFCC differs
from librosa's float32 arithmetic by at most 1.2e-8 in these scores, hence ``abs=1e-7``.
"""

from __future__ import annotations

import wave
from pathlib import Path

import av
import numpy as np
import pytest
import soundfile
from osworld_mcp_env.errors import EvaluationError
from osworld_mcp_env.evaluators import METRICS
from osworld_mcp_env.evaluators.metrics.media import load_audio

UP = [262, 294, 330, 349, 392, 440]
DOWN = [523, 494, 440, 392, 349, 330]


def metric(name: str):
    return METRICS.get(name).fn


def melody(notes: list[int], rate: int = 22050, *, noise: float = 0.0) -> np.ndarray:
    """Quarter-second Hann-shaped sine notes as int16, with optional seeded white noise."""
    t = np.arange(int(rate * 0.25)) / rate
    y = np.concatenate([0.5 * np.sin(2 * np.pi * f * t) * np.hanning(len(t)) for f in notes])
    if noise:
        y = y + noise * np.random.default_rng(1).standard_normal(len(y))
    return np.clip(np.round(y * 32767), -32768, 32767).astype("<i2")


def write_wav(path: Path, pcm: np.ndarray, rate: int = 22050, *, stereo: bool = False) -> str:
    """A 16-bit WAV; stereo puts the melody left and half of it right."""
    with wave.open(str(path), "wb") as out:
        out.setnchannels(2 if stereo else 1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(np.stack([pcm, pcm // 2], axis=1).tobytes() if stereo else pcm.tobytes())
    return str(path)


def write_mp3(path: Path, pcm: np.ndarray, rate: int = 22050) -> str:
    """An MP3 encoded with PyAV's LAME (the mono melody)."""
    with av.open(str(path), "w") as out:
        stream = out.add_stream("libmp3lame", rate=rate)
        stream.layout = "mono"
        frame = av.AudioFrame.from_ndarray(pcm.reshape(1, -1), format="s16", layout="mono")
        frame.sample_rate = rate
        for packet in [*stream.encode(frame), *stream.encode(None)]:
            out.mux(packet)
    return str(path)


def test_wav_decodes_like_libsndfile(tmp_path: Path):
    pcm = melody(UP)
    # librosa.load via soundfile scales 16-bit samples by 1/32768, exactly.
    assert np.array_equal(load_audio(write_wav(tmp_path / "a.wav", pcm)), pcm.astype(np.float32) / 32768)


def test_compare_audios_scores_like_librosa_fastdtw(tmp_path: Path):
    fn = metric("compare_audios")
    gold = write_wav(tmp_path / "gold.wav", melody(UP))
    # Identical samples: identical MFCCs, DTW distance 0 -> exp(0) = 1.0.
    assert fn(write_wav(tmp_path / "same.wav", melody(UP)), gold) == pytest.approx(1.0, abs=1e-12)
    # Light noise: OSWorld's DTW distance 3.0384 over a 66-step path -> 0.9550075469594226.
    noisy = write_wav(tmp_path / "noisy.wav", melody(UP, noise=0.02))
    assert fn(noisy, gold) == pytest.approx(0.9550075469594226, abs=1e-7)
    # The melody backwards: distance 36.217 over 65 steps -> 0.5728235356559207.
    assert fn(write_wav(tmp_path / "wrong.wav", melody(DOWN)), gold) == pytest.approx(
        0.5728235356559207, abs=1e-7
    )
    # Only the first half of the melody still scores 0.909: DTW stretches the short file over the
    # long one and normalisation per coefficient hides the loudness (OSWorld: 0.9092627403280568).
    half = write_wav(tmp_path / "half.wav", melody(UP[:3]))
    assert fn(half, gold) == pytest.approx(0.9092627403280568, abs=1e-7)


def test_compare_audios_resamples_and_mixes_down(tmp_path: Path):
    fn = metric("compare_audios")
    gold = write_wav(tmp_path / "gold.wav", melody(UP))
    # 44.1 kHz stereo: mixed to mono and resampled to 22050 Hz by soxr (HQ), as librosa does:
    # OSWorld 0.9999998823041906; backwards: 0.5728462990282254.
    stereo = write_wav(tmp_path / "s.wav", melody(UP, 44100), 44100, stereo=True)
    assert fn(stereo, gold) == pytest.approx(0.9999998823041906, abs=1e-7)
    stereo_wrong = write_wav(tmp_path / "sw.wav", melody(DOWN, 44100), 44100, stereo=True)
    assert fn(stereo_wrong, gold) == pytest.approx(0.5728462990282254, abs=1e-7)


def test_compare_audios_decodes_mp3(tmp_path: Path):
    fn = metric("compare_audios")
    gold = write_wav(tmp_path / "gold.wav", melody(UP))
    # The MP3 of the same melody (LAME's encoder delay removed by both decoders): 0.9999054368384669.
    assert fn(write_mp3(tmp_path / "a.mp3", melody(UP)), gold) == pytest.approx(0.9999054368384669, abs=1e-7)
    assert fn(write_mp3(tmp_path / "b.mp3", melody(DOWN)), gold) == pytest.approx(
        0.5728107294189311, abs=1e-7
    )


def test_compare_audios_on_44_1_khz_wav_ogg_and_mp3(tmp_path: Path):
    fn = metric("compare_audios")
    gold = write_wav(tmp_path / "gold.wav", melody(UP, 44100), 44100)
    # OSWorld's numbers on these files (libsndfile + soxr through librosa 0.11). With FFmpeg's
    # decoders and resampler the noisy WAV scored 5.6e-3 higher and Vorbis files up to 7e-3 apart.
    noisy = write_wav(tmp_path / "noisy.wav", melody(UP, 44100, noise=0.02), 44100)
    assert fn(noisy, gold) == pytest.approx(0.9527495156259371, abs=1e-7)
    up, down = tmp_path / "up.ogg", tmp_path / "down.ogg"
    soundfile.write(up, melody(UP, 44100), 44100, format="OGG", subtype="VORBIS")
    soundfile.write(down, melody(DOWN, 44100), 44100, format="OGG", subtype="VORBIS")
    assert fn(str(up), gold) == pytest.approx(0.9917813207554355, abs=1e-7)
    assert fn(str(down), gold) == pytest.approx(0.5626606955084532, abs=1e-7)
    mp3 = write_mp3(tmp_path / "up.mp3", melody(UP, 44100), 44100)
    assert fn(mp3, gold) == pytest.approx(0.9999999425230547, abs=1e-7)


def test_compare_audios_missing_and_empty(tmp_path: Path):
    fn = metric("compare_audios")
    gold = write_wav(tmp_path / "gold.wav", melody(UP))
    empty = write_wav(tmp_path / "empty.wav", np.zeros(0, "<i2"))
    # No result path: OSWorld returns 0 before loading.
    assert fn(None, gold) == 0.0
    # Result empty, missing or not audio, expected fine: OSWorld's "one is bad" branch -> 0.0.
    assert fn(empty, gold) == 0.0
    assert fn(str(tmp_path / "missing.wav"), gold) == 0.0
    (tmp_path / "text.mp3").write_text("not audio")
    assert fn(str(tmp_path / "text.mp3"), gold) == 0.0
    # The task's own file empty: OSWorld scores 1 if the result is empty too; here the task is broken.
    with pytest.raises(EvaluationError, match="expected audio"):
        fn(empty, empty)


def clip(n: int, flipped: range = range(0)) -> list[np.ndarray]:
    """64x48 frames of a random 16x12 pattern scrolling right; frames in ``flipped`` upside down."""
    base = np.random.default_rng(0).integers(0, 256, (12, 16, 3)).astype(np.uint8)
    frames = [np.kron(np.roll(base, k, axis=1), np.ones((4, 4, 1), np.uint8)) for k in range(n)]
    return [f[::-1].copy() if k in flipped else f for k, f in enumerate(frames)]


def write_mp4(path: Path, frames: list[np.ndarray], codec: str = "mpeg4") -> str:
    with av.open(str(path), "w") as out:
        stream = out.add_stream(codec, rate=10)
        stream.width, stream.height, stream.pix_fmt = 64, 48, "yuv420p"
        if codec == "mpeg4":
            stream.options = {"qscale": "2"}
        for frame in frames:
            for packet in stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return str(path)


def test_compare_videos_counts_frames_whose_hashes_differ(tmp_path: Path):
    fn = metric("compare_videos")
    gold = write_mp4(tmp_path / "gold.mp4", clip(20))
    assert fn(write_mp4(tmp_path / "same.mp4", clip(20)), gold) == 1.0
    # Frames 3-7 flipped: 5 pairs with hash distance 28-34 > 5; OSWorld fails at the 6th, not the 5th.
    assert fn(write_mp4(tmp_path / "five.mp4", clip(20, range(3, 8))), gold) == 1.0
    assert fn(write_mp4(tmp_path / "six.mp4", clip(20, range(3, 9))), gold) == 0.0
    # One frame short: the result ends while the gold goes on -> 0.
    assert fn(write_mp4(tmp_path / "short.mp4", clip(19)), gold) == 0.0
    # Re-encoded with H.264: hash distances 0-6, a few above 5 but fewer than 6 -> 1.
    assert fn(write_mp4(tmp_path / "h264.mp4", clip(20), "libx264"), gold) == 1.0


def test_compare_videos_checks_only_the_first_100_frames(tmp_path: Path):
    fn = metric("compare_videos")
    gold = write_mp4(tmp_path / "gold.mp4", clip(110))
    # Frames 100-109 flipped, and they are past max_frames_to_check=100: still 1.
    assert fn(write_mp4(tmp_path / "tail.mp4", clip(110, range(100, 110))), gold) == 1.0
    # With max_frames_to_check=110 the 10 flipped frames count: 0.
    assert fn(str(tmp_path / "tail.mp4"), gold, max_frames_to_check=110) == 0.0


def test_compare_videos_unreadable_files(tmp_path: Path):
    fn = metric("compare_videos")
    gold = write_mp4(tmp_path / "gold.mp4", clip(5))
    (tmp_path / "text.mp4").write_text("hello")
    # OpenCV's read fails at once on a missing, unreadable or None path: 0 against a real video.
    assert fn(str(tmp_path / "missing.mp4"), gold) == 0.0
    assert fn(str(tmp_path / "text.mp4"), gold) == 0.0
    assert fn(None, gold) == 0.0
    # OSWorld scores 1 when neither side has frames ("both ended together"); an expected video
    # without frames is the task's fault here.
    with pytest.raises(EvaluationError, match="expected video"):
        fn(str(tmp_path / "missing.mp4"), str(tmp_path / "text.mp4"))
