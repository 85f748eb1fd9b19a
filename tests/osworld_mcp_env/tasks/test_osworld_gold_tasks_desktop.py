"""OSWorld multi-app tasks whose answer is the content of OSWorld's gold file, as env episodes (-m desktop).

The real answers were read off live sites and papers; offline they are hand-chosen
here, once, as plain Python values (papers, movies, awards, grades, ...). From those
values two files are made by two different routes, so the task's check still compares
two independent results: the stand-in gold (the cache layout ``tasks fetch`` fills, as in
:mod:`test_osworld_cached_tasks_desktop`) is written on the host by openpyxl or
python-docx, and the oracle makes the agent's file on the desktop with LibreOffice
(a flat ODS or a text or HTML document it writes, converted by a headless ``soffice``
with its own profile), or fetches it from the stand-in site (``curl``), or types it into
the app (Thunderbird's composer). Where the task's postconfig saves the open document
with ctrl+s, the oracle shows its file in that window first, as an agent would leave it.
Each task: the no-op (terminate at once) scores 0, the oracle scores 1.
"""

from __future__ import annotations

import email.message
import functools
import html
import io
import json
import os
import shlex
import shutil
import subprocess
import tarfile
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import docx
import gymnasium as gym
import openpyxl
import pytest
import test_osworld_cached_tasks_desktop as cached
import test_osworld_website_episodes_desktop as web
from osworld_mcp_env.tasks import read_task_file
from polling import wait_until
from stand_in_sites import Page, StandIn, stand_in_env, stand_in_sites, trusting
from task_data import OSWORLD_EXAMPLES, fill_stand_in_cache

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl makes the stand-ins' certificate"),
    pytest.mark.skipif(
        shutil.which("thunderbird") is None, reason="Thunderbird names its install's profile key"
    ),
]

HOSTS = ["huggingface.co", "www.imdb.com", "aclanthology.org", "developer.apple.com", "dblp.org"]
Row = list[str | int | float | None]
Sheets = dict[str, list[Row]]

# --- the answers, hand-chosen once ------------------------------------------------------------------

# 236833a3: Hugging Face's daily papers of 1 March 2024, one paragraph each; the user wrote the first two.
PAPERS = [
    "The Era of 1-bit LLMs: All Large Language Models are in 1.58 Bits; Shuming Ma, Hongyu Wang, "
    "Lingxiao Ma; https://huggingface.co/papers/2402.17764",
    "Beyond Language Models: Byte Models are Digital World Simulators; Shangda Wu, Xu Tan, Zili Wang; "
    "https://huggingface.co/papers/2402.19155",
    "Panda-70M: Captioning 70M Videos with Multiple Cross-Modality Teachers; Tsai-Shien Chen, Aliaksandr "
    "Siarohin; https://huggingface.co/papers/2402.19479",
    "MOSAIC: A Modular System for Assistive and Interactive Cooking; Huaxiaoyue Wang, Kushal Kedia; "
    "https://huggingface.co/papers/2402.18796",
]
PAPER_HEADING = "Daily Papers, 1 March 2024"
# 3e3fc409: IMDb's top list (rank, title, year, rating) and the films the user has seen.
MOVIE_HEADERS: Row = ["Rank", "Title", "Year", "Rating"]
TOP = [
    [1, "The Shawshank Redemption", 1994, 9.3],
    [2, "The Godfather", 1972, 9.2],
    [3, "The Dark Knight", 2008, 9.0],
    [4, "The Godfather Part II", 1974, 9.0],
    [5, "12 Angry Men", 1957, 9.0],
    [6, "Dune: Part Two", 2024, 8.8],
    [7, "Pulp Fiction", 1994, 8.9],
]
SEEN = {"The Godfather", "12 Angry Men"}
# 415ef462: the tally book, and the row the December invoice adds.
TALLY: list[Row] = [
    ["Date", "Item", "Amount"],
    ["2023-08", "AWS", 12],
    ["2023-09", "AWS", 15],
    ["2023-10", "AWS", 11],
    ["2023-11", "AWS", 14],
]
TALLY_DECEMBER: Row = ["2023-12", "AWS", 17]
INVOICE = cached.text_pdf("Amazon Web Services invoice 0123456789-2312, total USD 17.00")
# 67890eb6: ACL's best long papers, 2022 back to 2019.
AWARD_HEADERS: Row = ["Title", "Year", "Author List", "PDF Link"]
AWARDS: list[Row] = [
    [
        "Learned Incremental Representations for Parsing",
        2022,
        "Nikita Kitaev, Thomas Lu, Dan Klein",
        "https://aclanthology.org/2022.acl-long.220.pdf",
    ],
    [
        "Vocabulary Learning via Optimal Transport for Neural Machine Translation",
        2021,
        "Jingjing Xu, Hao Zhou, Chun Gan, Zaixiang Zheng, Lei Li",
        "https://aclanthology.org/2021.acl-long.571.pdf",
    ],
    [
        "Beyond Accuracy: Behavioral Testing of NLP Models with CheckList",
        2020,
        "Marco Tulio Ribeiro, Tongshuang Wu, Carlos Guestrin, Sameer Singh",
        "https://aclanthology.org/2020.acl-main.442.pdf",
    ],
    [
        "Bridging the Gap between Training and Inference for Neural Machine Translation",
        2019,
        "Wen Zhang, Yang Feng, Fandong Meng, Di You, Qun Liu",
        "https://aclanthology.org/P19-1426.pdf",
    ],
]
# aad10cd7: the guideline page; the notes keep its text from "Searching" to just before "Resources".
HIG = ("developer.apple.com", "/design/human-interface-guidelines/searching")
NOTES = [
    ("h1", "Searching"),
    (
        "p",
        "People use various search techniques to find content on their device, within an app, "
        "and within a document.",
    ),
    ("h2", "Best practices"),
    ("p", "If search is important in your app, make it a primary action."),
    ("p", "Use placeholder text to indicate what content is searchable."),
]
RESOURCES = [("h2", "Resources"), ("p", "Related: Search fields, Searching in visionOS.")]
# aceb0368: the answer key, each student's answers, and the scoring (one point a question).
KEY = "ABCDA"
ANSWERS = {"Alice": "ABCDA", "Bob": "ABCCA", "Carol": "BBCDD", "Dave": "DCBAA"}
# b5062e3e: each paper's first author (name, e-mail, affiliation), by file name.
AUTHORS = {
    "zhang_appagent.pdf": ["Chi Zhang", "chi.zhang@tencent.example.org", "Tencent"],
    "niu_screenagent.pdf": ["Runliang Niu", "niurl@jlu.example.org", "Jilin University"],
    "koh_visualwebarena.pdf": ["Jing Yu Koh", "jingyuk@cmu.example.org", "Carnegie Mellon University"],
    "deng_mind2web.pdf": ["Xiang Deng", "deng.595@osu.example.org", "The Ohio State University"],
}
# d1acdb87: the restaurants, with what Google Maps shows for each.
RESTAURANT_HEADERS: Row = ["Restaurant Name", "Address", "Contact Number", "Website"]
RESTAURANTS: list[Row] = [
    ["Tim Ho Wan", "9-11 Fuk Wing Street, Sham Shui Po", "+852 2788 1226", "https://timhowan.example.com"],
    ["Kam's Roast Goose", "226 Hennessy Road, Wan Chai", "+852 2520 1110", "https://krg.example.com"],
    ["Mak's Noodle", "77 Wellington Street, Central", "+852 2854 3810", "https://maks.example.com"],
    ["Lan Fong Yuen", "2 Gage Street, Central", "+852 2544 3895", "https://lfy.example.com"],
    ["Yat Lok", "34-38 Stanley Street, Central", "+852 2524 3882", "https://yatlok.example.com"],
]
# da52d699: the books read in 2022 (title, words, days); the slowest pace in words per day is the answer.
BOOKS: list[Row] = [
    ["The Hobbit", 95356, 20],
    ["Dune", 188000, 31],
    ["Beloved", 105000, 70],
    ["1984", 88942, 12],
]
# df67aebb: the papers' dblp BibTeX records, by dblp key.
BIBTEX = {
    "conf/nips/VaswaniSPUJGKP17": "@inproceedings{DBLP:conf/nips/VaswaniSPUJGKP17,\n"
    "  author = {Ashish Vaswani and Noam Shazeer},\n  title = {Attention is All you Need},\n"
    "  booktitle = {NeurIPS},\n  year = {2017}\n}",
    "conf/naacl/DevlinCLT19": "@inproceedings{DBLP:conf/naacl/DevlinCLT19,\n"
    "  author = {Jacob Devlin and Ming{-}Wei Chang},\n  title = {{BERT:} Pre-training of Deep Bidirectional"
    " Transformers},\n  booktitle = {NAACL-HLT},\n  year = {2019}\n}",
    "conf/iclr/YaoZYDSN023": "@inproceedings{DBLP:conf/iclr/YaoZYDSN023,\n"
    "  author = {Shunyu Yao and Jeffrey Zhao},\n  title = {ReAct: Synergizing Reasoning and Acting},\n"
    "  booktitle = {ICLR},\n  year = {2023}\n}",
}
BIB = "~/Desktop/references.bib"
# f5c13cdd: the payment record; who has not paid gets the reminder.
STUDENTS: list[Row] = [
    ["Fox", "fox@someuniversity.edu", "No"],
    ["Grace", "grace@someuniversity.edu", "Yes"],
    ["Iron", "iron@someuniversity.edu", "No"],
    ["Nancy", "nancy@someuniversity.edu", "No"],
    ["Oscar", "oscar@someuniversity.edu", "Yes"],
    ["Stella", "stella@someuniversity.edu", "No"],
]
SENDER = "anonym-x2024@outlook.com"


def _unseen() -> list[Row]:
    return [movie for movie in TOP if movie[1] not in SEEN and movie[2] < 2024]


def _grades(students: list[str]) -> list[Row]:
    rows: list[Row] = [["Name", *(f"Q{n + 1}" for n in range(len(KEY))), "Total"]]
    for name in students:
        points = [int(a == k) for a, k in zip(ANSWERS[name], KEY, strict=True)]
        rows.append([name, *points, sum(points)])
    return rows


def _slowest_book() -> str:
    return str(min(BOOKS, key=lambda book: int(book[1]) / int(book[2]))[0])


def _unpaid() -> list[str]:
    return [str(row[1]) for row in STUDENTS if row[2] == "No"]


# --- the host's route: openpyxl and python-docx ---------------------------------------------------


def xlsx(sheets: Sheets) -> bytes:
    book = openpyxl.Workbook()
    book.remove(book.active)
    for name, rows in sheets.items():
        sheet = book.create_sheet(name)
        for row in rows:
            sheet.append(row)
    data = io.BytesIO()
    book.save(data)
    return data.getvalue()


def word(paragraphs: list[str]) -> bytes:
    document = docx.Document()
    for text in paragraphs:
        document.add_paragraph(text)
    data = io.BytesIO()
    document.save(data)
    return data.getvalue()


# --- the desktop's route: LibreOffice converts what the oracle writes -------------------------------


def fods(sheets: Sheets) -> str:
    """A flat OpenDocument spreadsheet of ``sheets`` (what Calc would save as .fods)."""

    def cell(value: str | int | float | None) -> str:
        if value is None:
            return "<table:table-cell/>"
        if isinstance(value, str):
            kind, text = 'office:value-type="string"', html.escape(value)
        else:
            kind, text = f'office:value-type="float" office:value="{value}"', str(value)
        return f"<table:table-cell {kind}><text:p>{text}</text:p></table:table-cell>"

    tables = "".join(
        f'<table:table table:name="{html.escape(name)}">'
        + "".join(f"<table:table-row>{''.join(map(cell, row))}</table:table-row>" for row in rows)
        + "</table:table>"
        for name, rows in sheets.items()
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<office:document xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0"'
        ' xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0"'
        ' xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" office:version="1.2"'
        ' office:mimetype="application/vnd.oasis.opendocument.spreadsheet">'
        f"<office:body><office:spreadsheet>{tables}</office:spreadsheet></office:body></office:document>\n"
    )


def convert(target: str, kind: str, content: str | None = None, *, infilter: str = "") -> dict:
    """A headless LibreOffice makes ``target`` from ``/tmp/oracle/<name>.<kind>``, written from ``content``.

    ``content`` None: an earlier action wrote that file. The office the task opened keeps
    running with the user's profile; this one has its own, and writes beside the source:
    it leaves alone a file the other office holds (its lock file), so ``cp`` puts the
    result in place (the first runs scored the untouched open documents).
    """
    path = Path(target)
    source = f"/tmp/oracle/{path.stem}.{kind}"
    command = [
        "soffice",
        "-env:UserInstallation=file:///tmp/oracle/profile",
        "--headless",
        *([f"--infilter={infilter}"] if infilter else []),
        "--convert-to",
        path.suffix[1:],
        "--outdir",
        "/tmp/oracle",
        source,
    ]
    write = "" if content is None else f"cat > {source} <<'ORACLE_EOF'\n{content}\nORACLE_EOF\n"
    return web.bash(
        f"mkdir -p /tmp/oracle && {write}{shlex.join(command)} "
        f"&& cp /tmp/oracle/{path.name} {shlex.quote(target)}",
        timeout=240,
    )


def show(target: str, app: str) -> dict:
    """Shows ``target`` in LibreOffice ``app`` (calc, writer) as the file now is, for the postconfig's ctrl+s.

    A window still holding the old document is closed first (ctrl+w: it is unmodified, so
    no prompt), then the office opens the file again; both waits watch the window list.
    """
    title = shlex.quote(f"^{Path(target).name} - LibreOffice {app.title()}$")

    def wait(loop: str, seconds: int) -> str:
        check = 'xdotool search --name "$0" >/dev/null'
        return f"timeout {seconds} sh -c '{loop} {check}; do sleep 0.2; done' {title}"

    return web.bash(
        f'if w=$(xdotool search --name {title} | head -1) && [ -n "$w" ]; then '
        f"xdotool windowactivate --sync $w key --clearmodifiers ctrl+w; {wait('while', 60)} || exit 1; fi; "
        f"setsid -f libreoffice --{app} {shlex.quote(target)} </dev/null >/dev/null 2>&1; "
        f"{wait('until', 120)}",
        timeout=200,
    )


# --- Thunderbird's profile (415ef462, f5c13cdd) ---------------------------------------------------

PROFILE = ".thunderbird/stand-in.default"
PREFS = {
    "mail.accountmanager.accounts": "account1,account2",
    "mail.accountmanager.defaultaccount": "account1",
    "mail.accountmanager.localfoldersserver": "server2",
    "mail.account.account1.identities": "id1",
    "mail.account.account1.server": "server1",
    "mail.account.account2.server": "server2",
    "mail.identity.id1.fullName": "Anonym Tester",
    "mail.identity.id1.useremail": SENDER,
    "mail.identity.id1.valid": True,
    "mail.server.server1.type": "imap",
    "mail.server.server1.hostname": "outlook.office365.com",
    "mail.server.server1.userName": SENDER,
    "mail.server.server1.name": SENDER,
    "mail.server.server1.login_at_startup": False,
    "mail.server.server1.check_new_mail": False,
    "mail.server.server2.type": "none",
    "mail.server.server2.hostname": "Local Folders",
    "mail.server.server2.userName": "nobody",
    "mail.server.server2.name": "Local Folders",
    "mail.server.server2.directory-rel": "[ProfD]Mail/Local Folders",
    "mail.shell.checkDefaultClient": False,
    "mailnews.start_page.enabled": False,
    "mail.rights.version": 1,
    "datareporting.policy.dataSubmissionPolicyBypassNotification": True,
}


def _mbox(messages: list[email.message.EmailMessage]) -> bytes:
    folder = io.BytesIO()
    for message in messages:
        folder.write(b"From - Mon Jan  1 00:00:00 2024\n")
        folder.write(message.as_bytes().replace(b"\nFrom ", b"\n>From ") + b"\n")
    return folder.getvalue()


@functools.cache
def install_hash() -> str:
    """The key Thunderbird files this install's default profile under, as Thunderbird itself writes it.

    A profile that no install claims is passed over: Thunderbird made a new empty profile
    beside the stand-in's and showed no composer. The key hashes the install's folder, the
    host's and the desktop's alike, so a headless Thunderbird with an empty home on the host
    reads it off its own ``installs.ini``.
    """
    with tempfile.TemporaryDirectory() as home:
        installs = Path(home) / ".thunderbird" / "installs.ini"
        thunderbird = subprocess.Popen(
            ["thunderbird", "--headless"],
            env={**os.environ, "HOME": home},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            text = wait_until(
                lambda: installs.is_file() and installs.read_text(), 120, "Thunderbird's installs.ini"
            )
        finally:
            thunderbird.terminate()
            thunderbird.wait(30)
    return text.split("[", 1)[1].split("]", 1)[0]


def thunderbird_profile(folders: dict[str, list[email.message.EmailMessage]]) -> bytes:
    """A Thunderbird home (``~/.thunderbird``) with one IMAP account's identity and local mail folders."""
    prefs = "".join(f"user_pref({json.dumps(k)}, {json.dumps(v)});\n" for k, v in PREFS.items())
    claim = f"Default={PROFILE.split('/')[1]}\nLocked=1\n"
    files = {
        ".thunderbird/profiles.ini": "[Profile0]\nName=default\nIsRelative=1\n"
        f"Path={PROFILE.split('/')[1]}\nDefault=1\n\n[General]\nStartWithLastProfile=1\nVersion=2\n\n"
        f"[Install{install_hash()}]\n{claim}",
        ".thunderbird/installs.ini": f"[{install_hash()}]\n{claim}",
        f"{PROFILE}/prefs.js": prefs,
        **{f"{PROFILE}/Mail/Local Folders/{name}": _mbox(mail) for name, mail in folders.items()},
    }
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w:gz") as tar:
        for name, content in files.items():
            body = content.encode() if isinstance(content, str) else content
            entry = tarfile.TarInfo(name)
            entry.size = len(body)
            tar.addfile(entry, io.BytesIO(body))
    return data.getvalue()


def _invoice_mail() -> email.message.EmailMessage:
    message = email.message.EmailMessage()
    message["From"] = "Amazon Web Services <aws-receivables-support@email.amazon.com>"
    message["To"] = SENDER
    message["Subject"] = "Amazon Web Services Invoice Available [Account: 0123456789] [Invoice: 2312]"
    message.set_content("Your invoice for December 2023 is attached.")
    message.add_attachment(
        INVOICE, maintype="application", subtype="pdf", filename="invoice0123456789-2312.pdf"
    )
    return message


# The oracle of 415ef462 reads the mail folder as a user at a shell would: the PDF attached to the invoice.
SAVE_INVOICE = r"""python3 - <<'EOF'
import glob, mailbox, pathlib
home = pathlib.Path.home()
for message in mailbox.mbox(glob.glob(str(home / ".thunderbird/*/Mail/Local Folders/Bills"))[0]):
    for part in message.walk():
        if part.get_filename() == "invoice0123456789-2312.pdf":
            target = home / "Documents/Finance/receipts/aws-invoice-2312.pdf"
            target.write_bytes(part.get_payload(decode=True))
EOF"""

# f5c13cdd: waits (through the desktop's own pyatspi) until each address is a pill in the composer.
WAIT_PILLS = r"""timeout 60 python3 - {addresses} <<'EOF'
import sys, time, pyatspi
def names(node, depth=0):
    if node is None or depth > 60:
        return
    yield node.name or ""
    for i in range(node.childCount):
        yield from names(node.getChildAtIndex(i), depth + 1)
while True:
    desktop = pyatspi.Registry.getDesktop(0)
    apps = [desktop.getChildAtIndex(i) for i in range(desktop.childCount)]
    seen = {n for app in apps if app and "thunderbird" in (app.name or "").lower() for n in names(app)}
    if all(any(a in n for n in seen) for a in sys.argv[1:]):
        break
    time.sleep(0.5)
EOF"""


# Both agents first wait for the composer: a no-op that ended while Thunderbird was still starting had
# its first accessibility dump (Gecko builds its tree for the first AT-SPI client) run past the
# guest's 20 s bound under load.
COMPOSER_SHOWN = web.bash(
    "timeout 120 sh -c 'until xdotool search --onlyvisible --name \"$0\" >/dev/null; do sleep 0.2; done' "
    "'Reminder of Payment'",
    timeout=150,
)


def _compose_oracle() -> list[dict]:
    """Types the unpaid students' addresses into the composer's To field (focused when it opens)."""
    addresses = _unpaid()
    return [
        web.bash(
            "xdotool search --onlyvisible --name 'Reminder of Payment' | head -1"
            " | xargs -I{} xdotool windowactivate --sync {}"
        ),
        web.gui("type", text="".join(f"{a}, " for a in addresses)),
        web.bash(WAIT_PILLS.replace("{addresses}", shlex.join(addresses)), timeout=90),
    ]


# --- the cases -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One task, its oracle, and the stand-ins of the cache files it reads (by destination name)."""

    task: str
    oracle: list[dict]
    files: Callable[[], dict[str, bytes]]
    pages: dict[tuple[str, str], str | Page] = field(default_factory=dict)
    ready: list[dict] = field(default_factory=list)  # waits (no change) before either agent's first act

    @property
    def path(self) -> Path:
        return OSWORLD_EXAMPLES / "multi_apps" / f"{self.task}.json"


def _exam_zip() -> bytes:
    students = list(ANSWERS)
    files = {
        "exam/ReferenceAnswers.docx": word([f"{n + 1}. {k}" for n, k in enumerate(KEY)]),
        # The first student is graded already; the others have their name only.
        "exam/grades.xlsx": xlsx({"Sheet1": [*_grades(students[:1]), *([s] for s in students[1:])]}),
        **{f"exam/{s}.docx": word([f"{n + 1}. {a}" for n, a in enumerate(ANSWERS[s])]) for s in students},
    }
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w") as archive:
        for name, body in files.items():
            archive.writestr(name, body)
    return data.getvalue()


def _hig_page(blocks: list[tuple[str, str]]) -> str:
    return (
        "<html><body>"
        + "".join(f"<{tag}>{html.escape(text)}</{tag}>" for tag, text in blocks)
        + "</body></html>"
    )


# The oracle of aad10cd7 saves the page's text up to the Resources heading, converted by Writer.
CUT_NOTES = r"""mkdir -p /tmp/oracle \
&& curl -sfk https://developer.apple.com/design/human-interface-guidelines/searching | python3 -c '
import sys
print(sys.stdin.read().split("<h2>Resources</h2>")[0] + "</body></html>")' > /tmp/oracle/notes.html"""


def _cases() -> dict[str, Case]:
    desktop = "/home/user/Desktop"
    movies = {"Sheet1": [MOVIE_HEADERS, *(m for m in TOP if m[1] in SEEN)]}
    unseen = {**movies, "unseen_movies": [MOVIE_HEADERS, *_unseen()]}
    tally_done = {"Sheet1": [*TALLY, TALLY_DECEMBER]}
    awards = {"Sheet1": [AWARD_HEADERS, *AWARDS]}
    authors = {"Sheet1": [["Name", "Email", "Affiliation"], *sorted(AUTHORS.values())]}
    visit = {"Sheet1": [RESTAURANT_HEADERS, *RESTAURANTS]}
    tally = "/home/user/Documents/Finance/tally_book.xlsx"
    cases = [
        Case(
            "236833a3-5704-47fc-888c-4f298f09f799",
            [convert(f"{desktop}/paper_reading_2024_03_01.docx", "txt", "\n".join([PAPER_HEADING, *PAPERS]))],
            lambda: {
                "paper_reading_2024_03_01.docx": word([PAPER_HEADING, *PAPERS[:2]]),
                "gold_paper_reading_2024_03_01.docx": word([PAPER_HEADING, *PAPERS]),
            },
        ),
        Case(
            "3e3fc409-bff3-4905-bf16-c968eee3f807",
            [convert(f"{desktop}/movies.xlsx", "fods", fods(unseen))],
            lambda: {"movies.xlsx": xlsx(movies), "gold_movies.xlsx": xlsx(unseen)},
        ),
        Case(
            "415ef462-bed3-493a-ac36-ca8c6d23bf1b",
            [web.bash(SAVE_INVOICE), convert(tally, "fods", fods(tally_done)), show(tally, "calc")],
            lambda: {
                **{
                    f"aws-invoice-23{m}.pdf": cached.text_pdf(f"AWS invoice 23{m}")
                    for m in ("08", "09", "10", "11")
                },
                "X-receipt-2312.pdf": cached.text_pdf("A receipt of December"),
                "tally_book.xlsx": xlsx({"Sheet1": TALLY}),
                ".projects.tar.xz": cached.generic(".projects.tar.xz"),
                "thunderbird-profile.tar.gz": thunderbird_profile({"Bills": [_invoice_mail()], "Inbox": []}),
                ".aws-invoice-2312.pdf": INVOICE,
                "tally_book_gt.xlsx": xlsx(tally_done),
            },
        ),
        Case(
            "67890eb6-6ce5-4c00-9e3d-fb4972699b06",
            [
                convert(f"{desktop}/best_awards_acl.xlsx", "fods", fods(awards)),
                show(f"{desktop}/best_awards_acl.xlsx", "calc"),
            ],
            lambda: {
                "best_awards_acl.xlsx": xlsx({"Sheet1": [AWARD_HEADERS]}),
                "gold_best_awards_acl.xlsx": xlsx(awards),
            },
        ),
        Case(
            "aad10cd7-9337-4b62-b704-a857848cedf2",
            [
                web.bash(CUT_NOTES),
                convert(f"{desktop}/notes.docx", "html", infilter="HTML (StarWriter)"),
                show(f"{desktop}/notes.docx", "writer"),
            ],
            lambda: {"notes_Gold.docx": word([text for _tag, text in NOTES])},
            {HIG: _hig_page([*NOTES, *RESOURCES])},
        ),
        Case(
            "aceb0368-56b8-4073-b70e-3dc9aee184e0",
            [convert("/home/user/exam/grades.xlsx", "fods", fods({"Sheet1": _grades(list(ANSWERS))}))],
            lambda: {"exam.zip": _exam_zip(), "gold_grades.xlsx": xlsx({"Sheet1": _grades(list(ANSWERS))})},
        ),
        Case(
            "b5062e3e-641c-4e3a-907b-ac864d2e7652",
            [convert("/home/user/authors.xlsx", "fods", fods(authors))],
            lambda: {
                **{name: cached.text_pdf(", ".join(author)) for name, author in AUTHORS.items()},
                "authors-gt.xlsx": xlsx(authors),
            },
        ),
        Case(
            "d1acdb87-bb67-4f30-84aa-990e56a09c92",
            [
                convert(f"{desktop}/MUST_VISIT.xlsx", "fods", fods(visit)),
                show(f"{desktop}/MUST_VISIT.xlsx", "calc"),
            ],
            lambda: {
                "restaurants.txt": "".join(f"{r[0]}\n" for r in RESTAURANTS).encode(),
                "MUST_VISIT.xlsx": xlsx({"Sheet1": [RESTAURANT_HEADERS, *([r[0]] for r in RESTAURANTS)]}),
                "MUST_VISIT-gt.xlsx": xlsx(visit),
            },
        ),
        Case(
            "da52d699-e8d2-4dc5-9191-a2199e0b6a9b",
            [
                convert(f"{desktop}/book_list_result.docx", "txt", _slowest_book()),
                show(f"{desktop}/book_list_result.docx", "writer"),
            ],
            lambda: {
                "2023_validation_Book_Reading_Rate.xlsx": xlsx(
                    {"Sheet1": [["Title", "Words", "Days"], *BOOKS]}
                ),
                "book_list_result.docx": word([]),
                "book_list_result_Gold.docx": word([_slowest_book()]),
            },
        ),
        Case(
            "df67aebb-fb3a-44fd-b75b-51b6012df509",
            [
                web.bash(
                    " && ".join(
                        f"curl -sfk https://dblp.org/rec/{key}.bib >> {BIB} && echo >> {BIB}"
                        for key in BIBTEX
                    )
                )
            ],
            lambda: {
                "references.docx": word(
                    [record.split("title = {")[1].split("},")[0] for record in BIBTEX.values()]
                ),
                "gold_references.bib": ("\n\n".join(BIBTEX.values()) + "\n").encode(),
            },
            {
                ("dblp.org", f"/rec/{key}.bib"): Page(record + "\n", "text/plain")
                for key, record in BIBTEX.items()
            },
        ),
        Case(
            "f5c13cdd-205c-4719-a562-348ae5cd1d91",
            _compose_oracle(),
            lambda: {
                "thunderbird-profile.tar.gz": thunderbird_profile({"Inbox": []}),
                ".payment-reminder-mail-body.html": b"<p>Dear student, your tuition payment is overdue.</p>",
                "tuition_payment.xlsx": xlsx({"Sheet1": [["Name", "E-mail", "Paid"], *STUDENTS]}),
            },
            ready=[COMPOSER_SHOWN],
        ),
    ]
    return {case.task[:8]: case for case in cases}


CASES = _cases()


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Iterator[StandIn]:
    pages = {key: page for case in CASES.values() for key, page in case.pages.items()}
    with stand_in_sites(tmp_path_factory.mktemp("tls"), HOSTS, pages) as stand_in:
        yield stand_in


@pytest.fixture(scope="module")
def file_cache(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("cache")
    for case in CASES.values():
        task = read_task_file(case.path)
        fill_stand_in_cache(root, task, case.files().__getitem__)
    return root


@pytest.fixture(scope="module")
def env(site: StandIn, file_cache: Path) -> Iterator[gym.Env]:
    env = stand_in_env(site, HOSTS, file_cache)
    yield env
    env.close()


@pytest.mark.parametrize("short_id", sorted(CASES))
def test_gold_task_no_op_0_oracle_1(env, site, short_id: str):
    case = CASES[short_id]
    reward, info = web.run_episode(
        env, trusting(json.loads(case.path.read_text()), site.spki), [*case.ready, web.terminate()]
    )
    assert reward == 0.0, info.get("evaluation")
    task = trusting(json.loads(case.path.read_text()), site.spki)
    reward, info = web.run_episode(env, task, [*case.ready, *case.oracle, web.terminate()])
    assert reward == 1.0, info.get("evaluation")


def test_the_two_routes_agree_on_a_sheet_before_any_desktop_runs(tmp_path: Path):
    """The oracle's flat ODS, converted by LibreOffice here, reads back as openpyxl's gold does."""
    pytest.importorskip("pandas")
    import pandas as pd
    from task_data import soffice_convert

    if shutil.which("soffice") is None:
        pytest.skip("LibreOffice converts the flat ODS")
    sheets = {"Sheet1": [MOVIE_HEADERS, *TOP], "unseen_movies": [MOVIE_HEADERS, *_unseen()]}
    (tmp_path / "m.fods").write_text(fods(sheets))
    made = soffice_convert(tmp_path / "m.fods", tmp_path / "out", "xlsx", tmp_path / "profile")
    (tmp_path / "gold.xlsx").write_bytes(xlsx(sheets))
    for name in sheets:
        assert pd.read_excel(made, name).equals(pd.read_excel(tmp_path / "gold.xlsx", name))
