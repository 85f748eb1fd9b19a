"""OS templates: file work in a seeded home folder, done in a terminal, checked by a command's output.

The setup launches xfce4-terminal in the task folder; the GUI oracle types one
shell command line into it. The evaluator runs a read-only command as the desktop
user and compares its output with ``exact_match`` (``rule`` expected value).
"""

from __future__ import annotations

import io
import random

from osworld_mcp_env.tasks.bundled.files import text
from osworld_mcp_env.tasks.templates import (
    DONE,
    HOME,
    NAMES,
    WORDS,
    Call,
    Instance,
    gui,
    pick,
    register_template,
    task_dict,
    tool,
    type_text,
    wait,
)


def terminal_setup(cwd: str) -> list[dict]:
    """Launch a terminal in ``cwd`` and focus it (the existing bundled os task's steps)."""
    return [
        {"type": "launch", "parameters": {"command": ["xfce4-terminal", f"--working-directory={cwd}"]}},
        {"type": "sleep", "parameters": {"seconds": 1.5}},
        {"type": "activate_window", "parameters": {"window_name": "Terminal"}},
    ]


# Where the terminal of terminal_setup() is. Openbox's smart placement centres a new
# window in the free area: the middle of an empty desktop, or the top-left corner when
# an app's maximized window leaves no free area (the multi-app tasks).
TERMINAL_ALONE = (960, 540)
TERMINAL_OVER_APP = (400, 250)


def shell(command: str, terminal_at: tuple[int, int] = TERMINAL_ALONE) -> list[Call]:
    """GUI route: click into the terminal, type ``command``, let it finish, stop."""
    return [gui("left_click", coordinate=list(terminal_at)), type_text(command + "\n"), wait(1), DONE]


def os_instance(
    task_id: str,
    instruction: str,
    inputs: dict[str, bytes],
    check: str,
    expected: str,
    command: str,
    wrong: str,
    tools: list[Call] | None,
    cwd: str = HOME,
    related: tuple[str, ...] = ("os", "terminal"),
    setup: list[dict] | None = None,
    terminal_at: tuple[int, int] = TERMINAL_ALONE,
) -> Instance:
    """An OS task: ``check`` (a shell command) must print ``expected`` exactly.

    ``terminal_at`` is where the GUI oracles click to focus the terminal.
    """
    task = task_dict(
        task_id,
        "os",
        instruction,
        setup if setup is not None else terminal_setup(cwd),
        {
            "func": "exact_match",
            "result": {"type": "vm_command_line", "command": check, "shell": True},
            "expected": {"type": "rule", "rules": {"expected": expected}},
        },
        list(related),
    )
    return Instance(
        task=task,
        inputs=inputs,
        gold={},
        gui=shell(command, terminal_at),
        tools=None if tools is None else [*tools, DONE],
        near_miss=shell(wrong, terminal_at),
    )


def folder(rng: random.Random) -> str:
    """A seeded folder under the home."""
    return f"{HOME}/{rng.choice(WORDS)}_{rng.randint(10, 99)}"


def lines(rng: random.Random, n: int) -> list[str]:
    """``n`` distinct seeded words."""
    return pick(rng, WORDS, n)


@register_template("os-write-file", "os", tools=False)
def write_file(rng: random.Random, task_id: str) -> Instance:
    """A new folder and a one-line file in it."""
    base, name = folder(rng), f"{rng.choice(WORDS)}.txt"
    content = f"{rng.choice(NAMES)} {rng.randint(1000, 9999)}"
    return os_instance(
        task_id,
        f'Create the folder {base} and, inside it, a file "{name}" whose only content is the line: {content}',
        {},
        f"cat {base}/{name}",
        content + "\n",
        f"mkdir -p {base} && echo '{content}' > {base}/{name}",
        f"mkdir -p {base} && echo '{content}.' > {base}/{name}",
        None,
    )


@register_template("os-rename-folder", "os", tools=True)
def rename_folder(rng: random.Random, task_id: str) -> Instance:
    """A folder with files to rename; the tool route is ``os.rename_directory``."""
    old = folder(rng)
    new = f"{HOME}/{rng.choice(('archive', 'backup', 'old', 'done'))}_{rng.randint(100, 999)}"
    files = {f"{old}/{w}.txt": text([w]) for w in lines(rng, 3)}
    check = f"test ! -e {old} && ls {new}"
    expected = "".join(f"{p.rsplit('/', 1)[1]}\n" for p in sorted(files))
    return os_instance(
        task_id,
        f"Rename the folder {old} to {new}.",
        files,
        check,
        expected,
        f"mv {old} {new}",
        f"cp -r {old} {new}",
        [tool("os.rename_directory", old_path=old, new_path=new)],
    )


@register_template("os-copy-by-pattern", "os", tools=True)
def copy_by_pattern(rng: random.Random, task_id: str) -> Instance:
    """Files of one extension copied into a folder, keeping sub-folders."""
    root = folder(rng)
    ext = rng.choice(("csv", "md", "log"))
    keep = [f"{sub}/{w}.{ext}" for sub, w in zip(("a", "b", "b/c"), lines(rng, 3), strict=True)]
    other = [f"a/{w}.txt" for w in lines(rng, 2)]
    inputs = {f"{root}/{p}": text([p]) for p in keep + other}
    dest = rng.choice(("collected", "picked", "only"))
    expected = "".join(f"./{p}\n" for p in sorted(keep))
    return os_instance(
        task_id,
        f"In {root}, copy every .{ext} file into the folder {root}/{dest}, keeping the sub-folder "
        "structure (a/x.csv goes to collected/a/x.csv). Leave the originals in place.",
        inputs,
        f"cd {root}/{dest} && find . -type f | sort",
        expected,
        f"cd {root} && mkdir -p {dest} && find . -name '*.{ext}' -not -path './{dest}/*' "
        f"-exec cp --parents {{}} {dest} \\;",
        f"mkdir -p {root}/{dest} && cp {root}/{keep[0]} {root}/{dest}/",
        [tool("os.copy_matching_files_with_hierarchy", root_dir=root, dest_dir=dest, pattern=f"*.{ext}")],
        cwd=root,
    )


@register_template("os-delete-by-extension", "os", tools=False)
def delete_by_extension(rng: random.Random, task_id: str) -> Instance:
    """Temporary files of one extension to delete, others to keep."""
    root = folder(rng)
    ext = rng.choice(("tmp", "bak", "log"))
    junk = [f"{w}.{ext}" for w in lines(rng, 3)]
    keep = [f"{w}.txt" for w in lines(rng, 2)]
    inputs = {f"{root}/{p}": text([p]) for p in junk + keep}
    return os_instance(
        task_id,
        f"Delete every .{ext} file in {root}; keep all other files.",
        inputs,
        f"ls {root}",
        "".join(f"{p}\n" for p in sorted(keep)),
        f"rm {root}/*.{ext}",
        f"rm {root}/{junk[0]}",
        None,
        cwd=root,
    )


@register_template("os-count-lines", "os", tools=False)
def count_lines(rng: random.Random, task_id: str) -> Instance:
    """The line count of a seeded file written into another file."""
    root = folder(rng)
    n = rng.randint(7, 19)
    src, out = f"{root}/{rng.choice(WORDS)}.txt", f"{root}/count.txt"
    inputs = {src: text(f"{rng.choice(WORDS)} {i}" for i in range(n))}
    return os_instance(
        task_id,
        f"Write the number of lines of {src} into {out} (only the number, on one line).",
        inputs,
        f"cat {out}",
        f"{n}\n",
        f"wc -l < {src} > {out}",
        f"echo {n - 1} > {out}",
        None,
        cwd=root,
    )


@register_template("os-make-executable", "os", tools=False)
def make_executable(rng: random.Random, task_id: str) -> Instance:
    """A script to make executable by its owner."""
    root = folder(rng)
    script = f"{root}/{rng.choice(WORDS)}.sh"
    inputs = {script: text(["#!/bin/sh", f"echo {rng.choice(NAMES)}"])}
    return os_instance(
        task_id,
        f"Make the script {script} executable (mode 755).",
        inputs,
        f"stat -c %a {script}",
        "755\n",
        f"chmod 755 {script}",
        f"chmod 744 {script}",
        None,
        cwd=root,
    )


@register_template("os-move-into-folder", "os", tools=False)
def move_into_folder(rng: random.Random, task_id: str) -> Instance:
    """Files of one kind moved into a new sub-folder."""
    root = folder(rng)
    ext, sub = rng.choice((("pdf", "papers"), ("png", "images"), ("mp3", "music")))
    moved = [f"{w}.{ext}" for w in lines(rng, 2)]
    stay = [f"{w}.txt" for w in lines(rng, 1)]
    inputs = {f"{root}/{p}": text([p]) for p in moved + stay}
    expected = "".join(f"./{p}\n" for p in sorted([*(f"{sub}/{m}" for m in moved), *stay]))
    return os_instance(
        task_id,
        f"In {root}, create a folder named {sub} and move every .{ext} file into it.",
        inputs,
        f"cd {root} && find . -type f | sort",
        expected,
        f"cd {root} && mkdir -p {sub} && mv *.{ext} {sub}/",
        f"cd {root} && mkdir -p {sub} && cp *.{ext} {sub}/",
        None,
        cwd=root,
    )


@register_template("os-find-word", "os", tools=False)
def find_word(rng: random.Random, task_id: str) -> Instance:
    """Which of several files holds a code word; its name goes into answer.txt."""
    root = folder(rng)
    names = [f"{w}.txt" for w in lines(rng, 4)]
    code = f"KEY-{rng.randint(1000, 9999)}"
    hit = rng.choice(names)
    inputs = {
        f"{root}/{n}": text([f"{rng.choice(WORDS)} notes", code if n == hit else "nothing here"])
        for n in names
    }
    miss = next(n for n in names if n != hit)
    return os_instance(
        task_id,
        f"One file in {root} contains the text {code}. Write that file's name (for example notes.txt) "
        f"into {root}/answer.txt.",
        inputs,
        f"cat {root}/answer.txt",
        f"{hit}\n",
        f"cd {root} && grep -l {code} *.txt > answer.txt",
        f"echo {miss} > {root}/answer.txt",
        None,
        cwd=root,
    )


@register_template("os-sort-lines", "os", tools=False)
def sort_lines(rng: random.Random, task_id: str) -> Instance:
    """The lines of a file sorted into a new file."""
    root = folder(rng)
    words = lines(rng, 6)
    src, out = f"{root}/names.txt", f"{root}/sorted.txt"
    return os_instance(
        task_id,
        f"Write the lines of {src} in alphabetical order into {out}.",
        {src: text(words)},
        f"cat {out}",
        "".join(f"{w}\n" for w in sorted(words)),
        f"sort {src} > {out}",
        f"sort -r {src} > {out}",
        None,
        cwd=root,
    )


@register_template("os-replace-in-file", "os", tools=False)
def replace_in_file(rng: random.Random, task_id: str) -> Instance:
    """A setting in a config file changed with sed."""
    root = folder(rng)
    conf = f"{root}/app.conf"
    port, new = rng.randint(3000, 3999), rng.randint(8000, 8999)
    body = ["[server]", f"port={port}", f"name={rng.choice(WORDS)}"]
    return os_instance(
        task_id,
        f"In {conf}, change the port from {port} to {new}; leave the other lines as they are.",
        {conf: text(body)},
        f"cat {conf}",
        "".join(f"{line}\n" for line in [body[0], f"port={new}", body[2]]),
        f"sed -i 's/port={port}/port={new}/' {conf}",
        f"sed -i 's/port={port}/port={new + 1}/' {conf}",
        None,
        cwd=root,
    )


@register_template("os-append-line", "os", tools=False)
def append_line(rng: random.Random, task_id: str) -> Instance:
    """A line appended to a list file."""
    root = folder(rng)
    todo = f"{root}/todo.txt"
    items = [f"call {n}" for n in pick(rng, NAMES, 3)]
    new = f"email {rng.choice(NAMES)}"
    return os_instance(
        task_id,
        f'Append the line "{new}" at the end of {todo}.',
        {todo: text(items)},
        f"cat {todo}",
        "".join(f"{line}\n" for line in [*items, new]),
        f"echo '{new}' >> {todo}",
        f"echo '{new}' > {todo}",
        None,
        cwd=root,
    )


@register_template("os-archive-folder", "os", tools=False)
def archive_folder(rng: random.Random, task_id: str) -> Instance:
    """A folder packed into a tar.gz whose member list is checked."""
    root = folder(rng)
    sub = rng.choice(("photos", "drafts", "reports"))
    names = [f"{w}.txt" for w in lines(rng, 3)]
    inputs = {f"{root}/{sub}/{n}": text([n]) for n in names}
    archive = f"{root}/{sub}.tar.gz"
    expected = "".join(f"{sub}/{n}\n" for n in sorted(names))
    return os_instance(
        task_id,
        f"Pack the folder {root}/{sub} into {archive} (gzip-compressed tar, paths starting with {sub}/).",
        inputs,
        f"tar -tzf {archive} | grep -v '/$' | sort",
        expected,
        f"cd {root} && tar -czf {sub}.tar.gz {sub}",
        f"cd {root} && tar -czf {sub}.tar.gz {sub}/{names[0]}",
        None,
        cwd=root,
    )


def png(rng: random.Random) -> bytes:
    """A small seeded PNG (flat colour), written by Pillow without timestamps."""
    from PIL import Image

    img = Image.new(
        "RGB", (rng.randint(20, 60), rng.randint(20, 60)), tuple(rng.randrange(256) for _ in range(3))
    )
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


@register_template("os-convert-image", "os", tools=True)
def convert_image(rng: random.Random, task_id: str) -> Instance:
    """A PNG converted to JPEG; the check reads the magic bytes of the new file."""
    root = folder(rng)
    stem = rng.choice(WORDS)
    src, out = f"{root}/{stem}.png", f"{root}/{stem}.jpg"
    return os_instance(
        task_id,
        f"Convert the image {src} to JPEG format, saved as {out}.",
        {src: png(rng)},
        f"head -c 3 {out} | od -An -tx1 | tr -d ' '",
        "ffd8ff\n",
        f"convert {src} {out}",
        f"cp {src} {out}",
        [tool("os.convert_image_format", image_path=src, output_format="jpg", output_path=out)],
        cwd=root,
    )


@register_template("os-git-commit", "os", tools=True)
def git_commit(rng: random.Random, task_id: str) -> Instance:
    """A folder turned into a git repository with one commit of a seeded message."""
    root = folder(rng)
    message = f"Add {rng.choice(WORDS)} notes"
    inputs = {f"{root}/{w}.txt": text([w]) for w in lines(rng, 2)}
    ident = "-c user.name=User -c user.email=user@example.com"
    check = f"git -C {root} log --format=%s && git -C {root} status --porcelain"
    return os_instance(
        task_id,
        f'Make {root} a git repository and commit all its files with the message "{message}" '
        "(any author name works).",
        inputs,
        check,
        f"{message}\n",
        f"git init -q && git add -A && git {ident} commit -qm '{message}'",
        f"git init -q && git add -A && git {ident} commit -qm '{message}.'",
        [
            tool("os.git_operation", operation="init", repo_path=root),
            tool("os.git_operation", operation="add", repo_path=root, arguments=["-A"]),
            tool(
                "os.git_set_user_info",
                username="User",
                email="user@example.com",
                is_global=False,
                repo_path=root,
            ),
            tool("os.git_operation", operation="commit", repo_path=root, arguments=["-m", message]),
        ],
        cwd=root,
    )


@register_template("os-make-symlink", "os", tools=False)
def make_symlink(rng: random.Random, task_id: str) -> Instance:
    """A symbolic link to a seeded file."""
    root = folder(rng)
    target = f"{root}/{rng.choice(WORDS)}_v{rng.randint(2, 9)}.txt"
    link = f"{root}/latest.txt"
    return os_instance(
        task_id,
        f"Create a symbolic link {link} that points to {target}.",
        {target: text(["current"])},
        f"readlink {link}",
        f"{target}\n",
        f"ln -s {target} {link}",
        f"cp {target} {link}",
        None,
        cwd=root,
    )


@register_template("os-first-line", "os", tools=False)
def first_line(rng: random.Random, task_id: str) -> Instance:
    """The first line of a log copied into its own file."""
    root = folder(rng)
    log = f"{root}/events.log"
    entries = [f"{rng.choice(NAMES)} {w} {rng.randint(10, 99)}" for w in lines(rng, 5)]
    out = f"{root}/first.txt"
    return os_instance(
        task_id,
        f"Write the first line of {log} (and nothing else) into {out}.",
        {log: text(entries)},
        f"cat {out}",
        f"{entries[0]}\n",
        f"head -n 1 {log} > {out}",
        f"tail -n 1 {log} > {out}",
        None,
        cwd=root,
    )
