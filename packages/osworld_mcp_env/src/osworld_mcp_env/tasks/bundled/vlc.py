"""VLC templates: pick the right seeded recording and play it, checked by ``is_vlc_playing``.

The recordings are quiet 8 kHz WAV tones, long enough (>= 60 s) to still be playing
when the episode is scored. The setup starts VLC and waits until its HTTP interface
answers and its window is mapped and focused (state, not time); the GUI oracle opens
the file with ``ctrl+o`` and types its path; the tool oracle enqueues and plays it
through the ``vlc`` namespace.
"""

from __future__ import annotations

import io
import math
import random
import wave

from osworld_mcp_env.tasks.templates import (
    DONE,
    HOME,
    WORDS,
    Call,
    Instance,
    key,
    register_template,
    task_dict,
    tool,
    type_text,
)

WAIT_FOR_VLC = (
    "for i in $(seq 150); do curl -sf -o /dev/null -u :password "
    "http://127.0.0.1:8080/requests/status.xml && break; sleep 0.2; done"
)
# VLC's HTTP interface answers before its window is mapped: OSWorld's activate_window step
# then found no window and the oracle's ctrl+o went nowhere (GUI oracle 0 in 3 of 8 runs).
# So setup polls until VLC's window is the active one, asking for it while it is not.
FOCUS_VLC = (
    "for i in $(seq 150); do xdotool getactivewindow getwindowname 2>/dev/null "
    "| grep -q 'VLC media player' && break; "
    "xdotool search --onlyvisible --name 'VLC media player' windowactivate 2>/dev/null; sleep 0.2; done"
)
# Evaluator postconfig: VLC reports "stopped" for a moment after the dialog hands it a
# file, and a GUI oracle that played the right file was scored 0 (1 of 10 runs). Poll
# until it plays, up to 10 s: an episode that played nothing is scored after that.
WAIT_FOR_PLAYING = (
    "for i in $(seq 50); do curl -sf -u :password http://127.0.0.1:8080/requests/status.xml "
    "| grep -q '<state>playing</state>' && break; sleep 0.2; done"
)


def tone_wav(seconds: int, pitch: int) -> bytes:
    """A quiet mono 8-bit tone (VLC probes the content, not the name)."""
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(1)
        w.setframerate(8000)
        w.writeframes(bytes(128 + int(20 * math.sin(i / pitch)) for i in range(8000 * seconds)))
    return buf.getvalue()


def open_with_dialog(path: str) -> list[Call]:
    """GUI route: VLC's Open File dialog, the path typed into it."""
    return [key("ctrl", "o"), type_text(path + "\n"), DONE]


def vlc_instance(task_id: str, instruction: str, files: dict[str, int], target: str, decoy: str) -> Instance:
    """A VLC task: ``files`` (path -> seconds) are uploaded; ``target`` must be playing."""
    task = task_dict(
        task_id,
        "vlc",
        instruction,
        [
            {"type": "launch", "parameters": {"command": "VLC_VERBOSE=-1 vlc --no-audio", "shell": True}},
            {"type": "execute", "parameters": {"command": WAIT_FOR_VLC, "shell": True}},
            {"type": "execute", "parameters": {"command": FOCUS_VLC, "shell": True}},
        ],
        {
            "func": "is_vlc_playing",
            "result": {"type": "vlc_playing_info", "dest": "status.xml"},
            "expected": {
                "type": "rule",
                "rules": {"type": "file_name", "file_name": target.rsplit("/", 1)[1]},
            },
            "postconfig": [{"type": "execute", "parameters": {"command": WAIT_FOR_PLAYING, "shell": True}}],
        },
        ["vlc"],
    )
    inputs = {path: tone_wav(seconds, 4 + i) for i, (path, seconds) in enumerate(files.items())}
    return Instance(
        task=task,
        inputs=inputs,
        gold={},
        gui=open_with_dialog(target),
        tools=[
            tool("vlc.add_to_playlist", uri=f"file://{target}"),
            tool("vlc.play"),
            DONE,
        ],
        near_miss=open_with_dialog(decoy),
    )


def tracks(rng: random.Random, folder: str, n: int) -> list[str]:
    """``n`` seeded track paths in ``folder``."""
    return [f"{folder}/{w}_{rng.randint(1, 99):02d}.wav" for w in rng.sample(WORDS, n)]


@register_template("vlc-play-named", "vlc", tools=True)
def play_named(rng: random.Random, task_id: str) -> Instance:
    """The track named in the instruction, among others in the same folder."""
    paths = tracks(rng, f"{HOME}/Music", 3)
    target, decoy = paths[0], paths[1]
    return vlc_instance(
        task_id, f"Play the recording {target} in VLC.", dict.fromkeys(paths, 60), target, decoy
    )


@register_template("vlc-play-longest", "vlc", tools=True)
def play_longest(rng: random.Random, task_id: str) -> Instance:
    """The longest of three recordings (their lengths are in the instruction's folder only)."""
    where = f"{HOME}/{rng.choice(('Recordings', 'Interviews', 'Lectures'))}"
    paths = tracks(rng, where, 3)
    lengths = rng.sample((60, 75, 90), 3)
    longest = paths[lengths.index(90)]
    decoy = paths[lengths.index(60)]
    return vlc_instance(
        task_id,
        f"Among the WAV recordings in {where}, play the longest one in VLC.",
        dict(zip(paths, lengths, strict=True)),
        longest,
        decoy,
    )


@register_template("vlc-play-from-note", "vlc", tools=True)
def play_from_note(rng: random.Random, task_id: str) -> Instance:
    """A note file says which track to play."""
    where = f"{HOME}/{rng.choice(('Podcasts', 'Shows', 'Episodes'))}"
    paths = tracks(rng, where, 3)
    target, decoy = paths[2], paths[0]
    note = f"{HOME}/{rng.choice(WORDS)}_next.txt"
    instance = vlc_instance(
        task_id,
        f"The file {note} names an episode in {where}. Play that episode in VLC.",
        dict.fromkeys(paths, 60),
        target,
        decoy,
    )
    inputs = {**instance.inputs, note: f"Next episode: {target.rsplit('/', 1)[1]}\n".encode()}
    return Instance(instance.task, inputs, {}, instance.gui, instance.tools, instance.near_miss)


@register_template("vlc-play-newest", "vlc", tools=True)
def play_newest(rng: random.Random, task_id: str) -> Instance:
    """Dated file names; the newest date is the one to play."""
    stem = rng.choice(WORDS)
    days = sorted(rng.sample(range(1, 28), 3))
    paths = [f"{HOME}/Videos/{stem}_2024-03-{d:02d}.wav" for d in days]
    rng.shuffle(paths)
    newest = max(paths)
    decoy = min(paths)
    return vlc_instance(
        task_id,
        f"The folder {HOME}/Videos holds dated recordings of {stem}. Play the most recent one in VLC.",
        dict.fromkeys(paths, 60),
        newest,
        decoy,
    )
