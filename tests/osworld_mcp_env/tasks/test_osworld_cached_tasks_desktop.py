"""OSWorld multi-app tasks that read OSWorld's file cache, as env episodes with stand-in files (-m desktop).

The tests have no internet, so the files a task downloads and its gold files (its
``cloud_file`` checks) cannot be OSWorld's own: each is a stand-in made here, in the
cache layout ``tasks fetch`` fills, and named as the task names it. A gold file is
made the way the task's answer is made (the PDFs of ``f7dfbef3`` by LibreOffice from
the same documents), never copied from what the oracle leaves, so the check still
compares two independent results. The websites the tasks open are loopback stand-ins
in internet mode (:mod:`stand_in_sites`), as in the website episodes. Each task: the
no-op (terminate at once) scores 0, the oracle, in the agent's own actions, scores 1.
"""

from __future__ import annotations

import html
import io
import json
import lzma
import shlex
import shutil
import struct
import subprocess
import tarfile
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import docx
import gymnasium as gym
import openpyxl
import pytest
import test_osworld_website_episodes_desktop as web
from osworld_mcp_env.tasks import read_task_file
from stand_in_sites import Page, StandIn, stand_in_env, stand_in_sites, trusting
from task_data import OSWORLD_EXAMPLES, fill_stand_in_cache, soffice_convert, zip_bytes

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl makes the stand-ins' certificate"),
    pytest.mark.skipif(shutil.which("soffice") is None, reason="LibreOffice makes f7dfbef3's gold PDFs"),
]

HOSTS = [
    "cs50.harvard.edu",
    "cdn.cs50.net",
    "picard.musicbrainz.org",
    "kid3.kde.org",
    "academicpages.github.io",
    "github.com",
    "raw.githubusercontent.com",
    "colab.research.google.com",
    "webext.eu",
]
LECTURES = range(10)  # CS50P 2022: weeks 0 to 9, one lecture PDF each
SONGS = [
    ("Cheng Xiang", "Missing You"),
    ("Han Baoyi", "Tears of Dancing Girl"),
    ("Huang An", "I Know Missing is Painful"),
    ("Chen Shaohua", "Red Daughter"),
    ("Zhou Xuan", "Nights in Shanghai"),
]
DOCS = ["minutes", "budget plan", "reading list"]
ODS = "file_example_ODS_5000"
# The notebook's cells as the stand-in colab page shows them: markdown, then code with comments.
CELLS = [
    ("markdown", "## Building a GPT\nFollow along with the video."),
    (
        "code",
        "# We always start with a dataset to train on.\nwith open('input.txt') as f:\n    text = f.read()",
    ),
    ("markdown", "Let's look at the characters."),
    ("code", "chars = sorted(list(set(text)))\nvocab_size = len(chars)  # the vocabulary\nprint(vocab_size)"),
]
COLAB = ("colab.research.google.com", "/drive/1JMLa53HDuA-i7ZBmqV7ZnA3c_fvtXnx-?usp=sharing")
# The oracle reads the shown notebook's code cells (not its markdown) and writes them one after another.
EXTRACT_CODE = r"""python3 - <<'EOF'
import html.parser, pathlib, ssl, urllib.request
url = "https://colab.research.google.com/drive/1JMLa53HDuA-i7ZBmqV7ZnA3c_fvtXnx-?usp=sharing"
page = urllib.request.urlopen(url, context=ssl._create_unverified_context()).read().decode()
class Cells(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(); self.code, self.inside = [], False
    def handle_starttag(self, tag, attrs):
        if tag == "pre" and ("class", "code") in attrs:
            self.inside = True; self.code.append("")
    def handle_endtag(self, tag):
        self.inside = self.inside and tag != "pre"
    def handle_data(self, data):
        if self.inside:
            self.code[-1] += data
cells = Cells(); cells.feed(page)
pathlib.Path.home().joinpath("gpt_dev_pure_code.py").write_text("\n\n".join(cells.code) + "\n")
EOF"""
CHAPTERS = ["Prologue", "Freshman Orientation", "Early Buildings"]  # the last one is not downloaded yet
RAW = "/liangjs333/4th-year-in-tsinghua-eng/main/"
NOVELS = "~/Documents/Novels/4th\\ Year\\ in\\ Tsinghua"
# What webext.eu's generator zips for "happy-extension 0.0.1" with a background script and a browser action.
EXTENSION = {
    "happy-extension/manifest.json": json.dumps(
        {
            "manifest_version": 2,
            "name": "happy-extension",
            "version": "0.0.1",
            "description": "",
            "icons": {"64": "icons/icon.png"},
            "background": {"scripts": ["background_script.js"]},
            "browser_action": {
                "default_icon": {"64": "icons/icon.png"},
                "default_popup": "browserAction/index.html",
                "default_title": "happy-extension",
            },
        },
        indent=2,
    ),
    "happy-extension/background_script.js": "// The background script\nconsole.log('background');\n",
    "happy-extension/browserAction/index.html": "<!DOCTYPE html>\n<html><body><h1>happy-extension</h1>"
    "<script src='script.js'></script></body></html>\n",
    "happy-extension/browserAction/style.css": "h1 { font-size: 1.2em; }\n",
    "happy-extension/browserAction/script.js": "document.body.dataset.ready = 'yes';\n",
    "happy-extension/icons/icon.png": "",
}
REPO = {  # the stand-in of xlang-ai/instructor-embedding: a few files in folders (ls -R's order is plain)
    "readme.md": "# instructor\n",
    "setup.py": "from setuptools import setup\n",
    "instructor/__init__.py": "",
    "instructor/model.py": "class Instructor: ...\n",
    "evaluation/run.py": "print('eval')\n",
}


def text_pdf(text: str, *more: str) -> bytes:
    """A PDF of one page per text, each shown in Helvetica (what a text extractor reads back)."""
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    kids = []
    for page_text in (text, *more):
        stream = f"BT /F1 12 Tf 72 720 Td ({page_text}) Tj ET".encode()
        kids.append(b"%d 0 R" % (len(objects) + 1))
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >>"
            b" /Contents %d 0 R >>" % (len(objects) + 2)
        )
        objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream))
    objects[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(kids), len(kids))
    out, offsets = b"%PDF-1.4\n", []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    return out + b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)


def untagged_mp3(seconds: int = 1) -> bytes:
    """MPEG-1 Layer III frames of silence (128 kbit/s, 44.1 kHz) with no ID3 tag: "blank meta data"."""
    frame = bytes.fromhex("fffb9064") + bytes(417 - 4)
    return frame * (38 * seconds)


def tar_of(files: dict[str, bytes], mode: str) -> bytes:
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode=mode) as tar:
        for name, content in files.items():
            entry = tarfile.TarInfo(name)
            entry.size = len(content)
            tar.addfile(entry, io.BytesIO(content))
    return data.getvalue()


def xlsx() -> bytes:
    data = io.BytesIO()
    openpyxl.Workbook().save(data)
    return data.getvalue()


def generic(name: str) -> bytes:
    """A stand-in for a downloaded file the task's check never reads: a valid file of its type."""
    if name.endswith(".pdf"):
        return text_pdf(name)
    if name.endswith(".xlsx"):
        return xlsx()
    if name.endswith(".tar.xz"):
        return tar_of({"README.md": b"stand-in\n"}, "w:xz")
    raise AssertionError(f"no generic stand-in for {name!r}")


CONFIG_YML = """# Site settings
locale                   : "en-US"
title                    : "Your Name / Site Title"
name                     : &name "Your Name"
description              : &description "personal description"
url                      : https://academicpages.github.io

author:
  name             : "Your Sidebar Name"
  avatar           : "profile.png"
  bio              : "Short biography for the left-hand sidebar"
  location         : "Earth"
  email            : "none@example.org"
"""
# What a user changes in a text editor: the site's name, and the author's name and e-mail.
EDIT_CONFIG = (
    "cd ~/Code/Website/academicpages.github.io && sed -i "
    "-e 's/^name\\( *\\): &name .*/name\\1: \\&name \"Test Account\"/' "
    "-e '/^author:/,/^[^ ]/ s/^\\(  name *\\): .*/\\1: \"Test Account\"/' "
    "-e '/^author:/,/^[^ ]/ s/^\\(  email *\\): .*/\\1: \"Test@gmail.com\"/' _config.yml"
)
# Kid3's job at a shell: an ID3v2.3 tag (title, artist) in front of each file, read from its name.
TAG_MP3S = r"""python3 - <<'EOF'
import pathlib, struct
def frame(frame_id, text):
    data = b"\x00" + text.encode("latin-1")
    return frame_id.encode() + struct.pack(">I", len(data)) + b"\x00\x00" + data
for path in pathlib.Path.home().joinpath("Music").glob("*.mp3"):
    artist, title = path.stem.split(" - ", 1)
    body = frame("TIT2", title) + frame("TPE1", artist)
    size = bytes((len(body) >> shift) & 0x7F for shift in (21, 14, 7, 0))
    path.write_bytes(b"ID3\x03\x00\x00" + size + body + path.read_bytes())
EOF"""
# The other weeks' slides, from each week's page of the course site to the opened folder.
DOWNLOAD_SLIDES = " && ".join(
    f"curl -sfk -o ~/lecture_slides/lecture{n}.pdf https://cdn.cs50.net/python/2022/x/lectures/{n}/lecture{n}.pdf"
    for n in LECTURES
    if n
)


@dataclass(frozen=True)
class Case:
    """One task, its oracle, and the stand-ins of the cache files its check compares (by name)."""

    task: str
    oracle: list[dict]
    files: Callable[[Path], dict[str, bytes]] = lambda _tmp: {}
    pages: dict[tuple[str, str], str | Page] = field(default_factory=dict)

    @property
    def path(self) -> Path:
        return OSWORLD_EXAMPLES / f"{self.task}.json"


def _lecture_files(_tmp: Path) -> dict[str, bytes]:
    gold = io.BytesIO()
    with zipfile.ZipFile(gold, "w") as archive:
        archive.writestr("lecture_slides/", b"")
        for n in LECTURES:
            archive.writestr(f"lecture_slides/lecture{n}.pdf", text_pdf(f"CS50P Lecture {n}"))
    return {"lecture0.pdf": text_pdf("CS50P Lecture 0"), "gold_lecture_slides.zip": gold.getvalue()}


def _song_files(_tmp: Path) -> dict[str, bytes]:
    return {f"{artist} - {title}.mp3": untagged_mp3() for artist, title in SONGS}


def _site_files(_tmp: Path) -> dict[str, bytes]:
    return {".tmp.tar.xz": tar_of({"academicpages.github.io/_config.yml": CONFIG_YML.encode()}, "w:xz")}


def _doc_files(tmp: Path) -> dict[str, bytes]:
    """.doc files made by LibreOffice from Word documents, and the gold: the same converted to PDF."""
    docs, pdfs, profile = tmp / "docs", tmp / "pdfs", tmp / "profile"
    docs.mkdir()
    made = {}
    for name in DOCS:
        document = docx.Document()
        document.add_paragraph(f"The {name}, written for task f7dfbef3.")
        document.save(tmp / f"{name}.docx")
        made[f"{name}.doc"] = soffice_convert(tmp / f"{name}.docx", docs, "doc", profile).read_bytes()
        (docs / f"{name}.doc").write_bytes(made[f"{name}.doc"])
        soffice_convert(docs / f"{name}.doc", pdfs, "pdf", profile)
    pdf_names = {f"{name}.pdf": (pdfs / f"{name}.pdf").read_bytes() for name in DOCS}
    return {"doc.tar.gz": tar_of(made, "w:gz"), "pdf_gold.tar.gz": tar_of(pdf_names, "w:gz")}


def _ods_files(tmp: Path) -> dict[str, bytes]:
    """The sheet saved as .ods by LibreOffice, and the gold: that sheet converted to CSV by LibreOffice."""
    book = openpyxl.Workbook()
    for row in [["First Name", "Last Name", "Age"], ["Dulce", "Abril", 32], ["Mara", "Hashimoto", 25]]:
        book.active.append(row)
    book.save(tmp / f"{ODS}.xlsx")
    ods = soffice_convert(tmp / f"{ODS}.xlsx", tmp / "ods", "ods", tmp / "profile")
    csv = soffice_convert(ods, tmp / "csv", "csv", tmp / "profile")
    return {f"{ODS}.ods": ods.read_bytes(), f"{ODS}_gold.csv": csv.read_bytes()}


def _repository(tmp: Path) -> tuple[Path, bytes]:
    """A bare git repository served over git's dumb HTTP, and ``ls -R`` of its checkout (the gold log)."""
    work, bare = tmp / "instructor-embedding", tmp / "bare.git"
    for name, text in REPO.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(text)
    git = ["git", "-c", "user.name=stand-in", "-c", "user.email=stand-in@example.org"]
    for command in (["init", "-q"], ["add", "."], ["commit", "-qm", "stand-in"]):
        subprocess.run([*git, *command], cwd=work, check=True, capture_output=True)
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(bare)], check=True, capture_output=True)
    subprocess.run(["git", "update-server-info"], cwd=bare, check=True, capture_output=True)
    listing = subprocess.run(
        ["ls", "-R", "instructor-embedding/"], cwd=tmp, check=True, capture_output=True, env={"LC_ALL": "C"}
    ).stdout
    return bare, listing


def _colab_gold(_tmp: Path) -> dict[str, bytes]:
    return {"gpt_dev_pure_code_gold.py": "\n".join(text for kind, text in CELLS if kind == "code").encode()}


def _colab_page() -> str:
    cells = "".join(
        f"<pre class='code'>{html.escape(text)}</pre>"
        if kind == "code"
        else f"<div class='markdown'>{text}</div>"
        for kind, text in CELLS
    )
    return f"<html><head><title>gpt-dev.ipynb - Colab</title></head><body>{cells}</body></html>"


def _chapter(name: str) -> str:
    return f"\\chapter{{{name}}}\n{name} of the tale, as its author wrote it.\n"


def _chapter_files(_tmp: Path) -> dict[str, bytes]:
    old = {f"{name}.tex": _chapter(name).encode() for name in CHAPTERS[:-1]}
    return {".old-chapters.tar.xz": tar_of(old, "w:xz"), "real.tex": _chapter(CHAPTERS[-1]).encode()}


def _extension_files(_tmp: Path) -> dict[str, bytes]:
    """The generated project's gold files (the task's cloud files), as the stand-in generator writes them."""
    names = {"background_script.js": "background_script.js", "index.html": "browserAction/index.html"}
    names |= {"style.css": "browserAction/style.css", "script.js": "browserAction/script.js"}
    return {gold: EXTENSION[f"happy-extension/{path}"].encode() for gold, path in names.items()}


# The check greps ~/.bash_history, which bash writes when the postconfig kills the terminal, and
# reads it right after (OSWorld's order too): the oracle saves its line at once instead of racing
# bash's exit (one run under load scored ee9a3c83's oracle 0 without this).
SAVE_HISTORY = "; history -a\n"


def _convert_in_terminal() -> list[dict]:
    """Types the conversion into the gnome-terminal the setup opened, then waits for every PDF."""
    pdfs = " ".join(shlex.quote(f"{name}.pdf") for name in DOCS)
    wait = shlex.quote(f"until ls {pdfs} >/dev/null 2>&1; do sleep 0.2; done")
    return [
        web.bash("xdotool search --onlyvisible --class gnome-terminal windowactivate --sync"),
        web.gui("type", text=f"soffice --headless --convert-to pdf *.doc{SAVE_HISTORY}"),
        web.bash(f"cd ~/Desktop && timeout 100 sh -c {wait}", timeout=110),
    ]


def _cases() -> dict[str, Case]:
    cs50 = "/python/2022/weeks/"
    week_pages: dict[tuple[str, str], str | Page] = {
        ("cs50.harvard.edu", f"{cs50}{n}/"): f"<html><body><h1>Week {n}</h1><a href='https://cdn.cs50.net"
        f"/python/2022/x/lectures/{n}/lecture{n}.pdf'>Slides</a></body></html>"
        for n in LECTURES
    }
    cases = [
        Case(
            "multi_apps/0e5303d4-8820-42f6-b18d-daf7e633de21",
            [web.bash(DOWNLOAD_SLIDES)],
            _lecture_files,
            week_pages,
        ),
        Case("multi_apps/3f05f3b9-29ba-4b6b-95aa-2204697ffc06", [web.bash(TAG_MP3S)], _song_files),
        Case("multi_apps/e2392362-125e-4f76-a2ee-524b183a3412", [web.bash(EDIT_CONFIG)], _site_files),
        Case("multi_apps/f7dfbef3-7697-431c-883a-db8583a4e4f9", _convert_in_terminal(), _doc_files),
        Case(
            "multi_apps/ee9a3c83-f437-4879-8918-be5efbb9fac7",
            [
                web.bash("xdotool search --onlyvisible --class gnome-terminal windowactivate --sync"),
                web.gui("type", text=CONVERT_ODS + SAVE_HISTORY),
                web.bash(
                    f"timeout 100 sh -c 'until [ -s ~/Desktop/{ODS}.csv ]; do sleep 0.2; done'", timeout=110
                ),
            ],
            _ods_files,
        ),
        Case(
            "multi_apps/acb0f96b-e27c-44d8-b55f-7cb76609dfcd",
            # The stand-in's certificate is self-signed: git is told not to check it.
            [
                web.bash(
                    "cd ~ && git -c http.sslVerify=false clone -q https://github.com/xlang-ai/instructor-embedding"
                )
            ],
            lambda tmp: {"log_Gold.txt": _repository(tmp)[1]},
        ),
        Case(
            "multi_apps/dd60633f-2c72-42ba-8547-6f2c8cb0fdb0",
            [web.bash(EXTRACT_CODE)],
            _colab_gold,
            {COLAB: _colab_page()},
        ),
        Case(
            "multi_apps/788b3701-3ec9-4b67-b679-418bfa726c22",
            # The repository lists the chapters in order; the folder lacks the last one: fetch its raw file.
            [
                web.bash(
                    f"curl -sfk -o {NOVELS}/Early\\ Buildings.tex https://raw.githubusercontent.com{RAW}early_buildings.tex"
                )
            ],
            _chapter_files,
            {
                ("raw.githubusercontent.com", f"{RAW}early_buildings.tex"): Page(
                    _chapter(CHAPTERS[-1]), "text/plain"
                )
            },
        ),
        Case(
            "multi_apps/74d5859f-ed66-4d3e-aa0e-93d7a592ce41",
            # The generator's download (its form's options in the query), unzipped into ~/Projects.
            [
                web.bash(
                    "curl -sfk -o /tmp/happy-extension.zip 'https://webext.eu/generate?name=happy-extension"
                    "&version=0.0.1&background=1&browser_action=1'"
                    " && unzip -q -o /tmp/happy-extension.zip -d ~/Projects"
                )
            ],
            _extension_files,
            {
                (
                    "webext.eu",
                    "/generate?name=happy-extension&version=0.0.1&background=1&browser_action=1",
                ): Page(zip_bytes(EXTENSION), "application/zip")
            },
        ),
    ]
    return {case.task.split("/")[1][:8]: case for case in cases}


# With Calc still open on the sheet, a second soffice needs its own profile to convert (the task's point).
CONVERT_ODS = (
    f"soffice -env:UserInstallation=file:///tmp/convert-profile --headless --convert-to csv {ODS}.ods"
)


CASES = _cases()


def _dynamic(host: str, path: str) -> Page | None:
    if host == "github.com" and path.startswith(REPO_PATH):
        served = REPOSITORY[0] / path.removeprefix(REPO_PATH).split("?")[0].lstrip("/")
        if served.is_file() and REPOSITORY[0] in served.resolve().parents:
            return Page(served.read_bytes(), "application/octet-stream")
        return Page(b"", "text/plain", status=404)
    if host == "cdn.cs50.net" and path.endswith(".pdf"):
        number = path.rsplit("lecture", 1)[1].removesuffix(".pdf")
        return Page(text_pdf(f"CS50P Lecture {number}"), "application/pdf")
    return None


REPO_PATH = "/xlang-ai/instructor-embedding"
REPOSITORY: list[Path] = []  # the bare repository github.com's stand-in serves


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Iterator[StandIn]:
    REPOSITORY[:] = [_repository(tmp_path_factory.mktemp("git"))[0]]
    pages = {key: page for case in CASES.values() for key, page in case.pages.items()}
    with stand_in_sites(tmp_path_factory.mktemp("tls"), HOSTS, pages, _dynamic) as stand_in:
        yield stand_in


@pytest.fixture(scope="module")
def file_cache(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("cache")
    for case in CASES.values():
        task = read_task_file(case.path)
        made = case.files(tmp_path_factory.mktemp(task.id[:8]))
        fill_stand_in_cache(root, task, lambda name, made=made: made[name] if name in made else generic(name))
    return root


@pytest.fixture(scope="module")
def env(site: StandIn, file_cache: Path) -> Iterator[gym.Env]:
    env = stand_in_env(site, HOSTS, file_cache)
    yield env
    env.close()


@pytest.mark.parametrize("short_id", sorted(CASES))
def test_cached_task_no_op_0_oracle_1(env, site, short_id: str):
    case = CASES[short_id]
    task = trusting(json.loads(case.path.read_text()), site.spki)
    reward, info = web.run_episode(env, task, [web.terminate()])
    assert reward == 0.0, info.get("evaluation")
    task = trusting(json.loads(case.path.read_text()), site.spki)
    reward, info = web.run_episode(env, task, [*case.oracle, web.terminate()])
    assert reward == 1.0, info.get("evaluation")


def test_the_stand_in_mp3_has_no_tag_and_the_pdf_reads_back():
    """The stand-ins are what they stand for: an untagged MP3, a PDF whose text a reader finds."""
    import pypdf

    assert not untagged_mp3().startswith(b"ID3") and untagged_mp3()[:2] == b"\xff\xfb"
    assert (
        pypdf.PdfReader(io.BytesIO(text_pdf("CS50P Lecture 3"))).pages[0].extract_text() == "CS50P Lecture 3"
    )
    pages = pypdf.PdfReader(io.BytesIO(text_pdf("one", "two", "three"))).pages
    assert [page.extract_text() for page in pages] == ["one", "two", "three"]
    assert struct.unpack(">H", untagged_mp3()[:2])[0] >> 5 == 0x7FF  # an MPEG frame sync
    assert lzma.decompress(generic("x.tar.xz"))  # a real xz stream
