"""Held-out tasks for `bench/bench_local.py --suite --set unseen` (see bench/local_suite.py)."""

from __future__ import annotations

import hashlib

from local_suite import SuiteTask

# ---------------------------------------------------------------------------------------------
# Shared check helpers (plain Python source, pasted into the checks that need them)

_RUN = (
    "import subprocess, sys\n"
    "def run(*args):\n"
    "    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=20)\n"
)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _outside(text: str, name: str) -> tuple[str, str]:
    """Hashes of the text before `def name` and from the next top-level def on."""
    start = text.index(f"def {name}")
    end = text.index("\ndef ", start + 1)
    end = start + len(text[start:end].rstrip("\n"))
    return _sha(text[:start]), _sha(text[end:])


# ---------------------------------------------------------------------------------------------
# The long module (~200 lines) for the deep-change task

_LEDGER = r'''"""A small accounts-receivable ledger: customers, invoices, payments and ageing reports."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from datetime import date, timedelta

CURRENCY = "EUR"
DEFAULT_TERMS_DAYS = 30
LATE_FEE_RATE = 0.015


@dataclass
class Customer:
    code: str
    name: str
    terms_days: int = DEFAULT_TERMS_DAYS
    credit_limit: float = 5000.0


@dataclass
class Invoice:
    number: str
    customer: str
    issued: date
    amount: float
    paid: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def balance(self) -> float:
        return round(self.amount - self.paid, 2)

    @property
    def settled(self) -> bool:
        return self.balance <= 0


@dataclass
class Ledger:
    customers: dict[str, Customer] = field(default_factory=dict)
    invoices: dict[str, Invoice] = field(default_factory=dict)
    next_number: int = 1


def add_customer(ledger: Ledger, code: str, name: str, terms_days: int = DEFAULT_TERMS_DAYS) -> Customer:
    """Register a customer; codes are upper-cased and must be unique."""
    code = code.upper()
    if code in ledger.customers:
        raise ValueError(f"customer {code} already exists")
    customer = Customer(code, name, terms_days)
    ledger.customers[code] = customer
    return customer


def format_number(n: int) -> str:
    """Invoice numbers look like INV-00042."""
    return f"INV-{n:05d}"


def issue_invoice(ledger: Ledger, customer: str, amount: float, issued: date) -> Invoice:
    """Create an invoice for a known customer and give it the next number."""
    customer = customer.upper()
    if customer not in ledger.customers:
        raise KeyError(customer)
    if amount <= 0:
        raise ValueError("amount must be positive")
    invoice = Invoice(format_number(ledger.next_number), customer, issued, round(amount, 2))
    ledger.next_number += 1
    ledger.invoices[invoice.number] = invoice
    return invoice


def record_payment(ledger: Ledger, number: str, amount: float) -> float:
    """Apply a payment to an invoice; returns any overpayment that could not be applied."""
    invoice = ledger.invoices[number]
    applied = min(amount, invoice.balance)
    invoice.paid = round(invoice.paid + applied, 2)
    invoice.notes.append(f"payment {applied:.2f}")
    return round(amount - applied, 2)


def due_date(ledger: Ledger, invoice: Invoice) -> date:
    """The date an invoice falls due, from its customer's payment terms."""
    terms = ledger.customers[invoice.customer].terms_days
    return invoice.issued + timedelta(days=terms)


def days_overdue(ledger: Ledger, invoice: Invoice, today: date) -> int:
    """Whole days past the due date; 0 when not yet due or already settled."""
    if invoice.settled:
        return 0
    return max(0, (today - due_date(ledger, invoice)).days)


def late_fee(ledger: Ledger, invoice: Invoice, today: date) -> float:
    """A simple monthly late fee on the open balance, charged per started month overdue."""
    overdue = days_overdue(ledger, invoice, today)
    if overdue == 0:
        return 0.0
    months = (overdue + 29) // 30
    return round(invoice.balance * LATE_FEE_RATE * months, 2)


def open_invoices(ledger: Ledger, customer: str | None = None) -> list[Invoice]:
    """Unsettled invoices, oldest first, optionally for one customer."""
    found = [
        inv
        for inv in ledger.invoices.values()
        if not inv.settled and (customer is None or inv.customer == customer.upper())
    ]
    return sorted(found, key=lambda inv: (inv.issued, inv.number))


def customer_balance(ledger: Ledger, customer: str) -> float:
    """Total open balance of one customer."""
    return round(sum(inv.balance for inv in open_invoices(ledger, customer)), 2)


def over_limit(ledger: Ledger) -> list[str]:
    """Codes of customers whose open balance exceeds their credit limit."""
    return sorted(
        code
        for code, cust in ledger.customers.items()
        if customer_balance(ledger, code) > cust.credit_limit
    )


def invoice_age(invoice: Invoice, today: date) -> int:
    """Days since the invoice was issued."""
    return (today - invoice.issued).days


def bucket_age(days: int) -> str:
    """Ageing bucket for an invoice that is `days` old: 0-30, 31-60, 61-90 or 90+."""
    if days < 30:
        return "0-30"
    if days <= 60:
        return "31-60"
    if days <= 90:
        return "61-90"
    return "90+"


def ageing_report(ledger: Ledger, today: date) -> dict[str, float]:
    """Open balance per ageing bucket."""
    report = {"0-30": 0.0, "31-60": 0.0, "61-90": 0.0, "90+": 0.0}
    for inv in open_invoices(ledger):
        bucket = bucket_age(invoice_age(inv, today))
        report[bucket] = round(report[bucket] + inv.balance, 2)
    return report


def statement_lines(ledger: Ledger, customer: str, today: date) -> list[str]:
    """Plain-text lines of a customer statement."""
    cust = ledger.customers[customer.upper()]
    lines = [f"Statement for {cust.name} ({cust.code}) on {today.isoformat()}"]
    for inv in open_invoices(ledger, customer):
        fee = late_fee(ledger, inv, today)
        extra = f" + late fee {fee:.2f}" if fee else ""
        lines.append(f"  {inv.number}  {inv.issued.isoformat()}  {inv.balance:>10.2f} {CURRENCY}{extra}")
    lines.append(f"  total due: {customer_balance(ledger, customer):.2f} {CURRENCY}")
    return lines


def export_csv(ledger: Ledger) -> str:
    """All invoices as CSV, one row each, in number order."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["number", "customer", "issued", "amount", "paid", "balance"])
    for number in sorted(ledger.invoices):
        inv = ledger.invoices[number]
        writer.writerow([inv.number, inv.customer, inv.issued.isoformat(), inv.amount, inv.paid, inv.balance])
    return out.getvalue()


def import_csv(ledger: Ledger, text: str) -> int:
    """Load invoices exported by export_csv; returns how many were added."""
    added = 0
    for row in csv.DictReader(io.StringIO(text)):
        if row["number"] in ledger.invoices:
            continue
        inv = Invoice(row["number"], row["customer"], date.fromisoformat(row["issued"]), float(row["amount"]))
        inv.paid = float(row["paid"])
        ledger.invoices[inv.number] = inv
        added += 1
    return added


def write_off(ledger: Ledger, number: str, reason: str) -> float:
    """Close an invoice without payment; returns the amount written off."""
    invoice = ledger.invoices[number]
    amount = invoice.balance
    invoice.paid = invoice.amount
    invoice.notes.append(f"written off {amount:.2f}: {reason}")
    return amount
'''

_LEDGER_PRE, _LEDGER_POST = _outside(_LEDGER, "bucket_age")

_LEDGER_CHECK = r"""
import hashlib
text = open("ledger.py", encoding="utf-8").read()
start = text.index("def bucket_age")
end = text.index("\ndef ", start + 1)
end = start + len(text[start:end].rstrip("\n"))
assert hashlib.sha256(text[:start].encode("utf-8")).hexdigest() == "PRE", "text before bucket_age changed"
assert hashlib.sha256(text[end:].encode("utf-8")).hexdigest() == "POST", "text after bucket_age changed"
from ledger import bucket_age
cases = {0: "0-30", 29: "0-30", 30: "0-30", 31: "31-60", 45: "31-60", 60: "31-60", 61: "61-90", 90: "61-90", 91: "90+"}
for days, want in cases.items():
    assert bucket_age(days) == want, (days, bucket_age(days))
""".replace("PRE", _LEDGER_PRE).replace("POST", _LEDGER_POST)


# ---------------------------------------------------------------------------------------------
# Small files

_CHUNKS = '''def chunk(items, size):
    """Split items into consecutive lists of at most `size` elements."""
    out = []
    for start in range(0, len(items) - 1, size):
        out.append(items[start:start + size])
    return out
'''

_TEST_CHUNKS = """from chunks import chunk


def test_even():
    assert chunk([1, 2, 3, 4], 2) == [[1, 2], [3, 4]]


def test_remainder():
    assert chunk([1, 2, 3, 4, 5], 2) == [[1, 2], [3, 4], [5]]


def test_empty():
    assert chunk([], 3) == []
"""

_COLORS = '''def hex_to_rgb(value):
    """'#1a2b3c' -> (26, 43, 60)."""
    value = value.lstrip("#")
    return tuple(int(value[i:i + 2], 16) for i in (0, 2, 4))


def is_grey(value):
    r, g, b = hex_to_rgb(value)
    return r == g == b
'''

_PRICING = """def calc_tax(amount):
    return round(amount * 0.2, 2)


def gross(amount):
    return round(amount + calc_tax(amount), 2)
"""

_INVOICE_RENAME = """from pricing import calc_tax, gross


def invoice_lines(amount):
    return [
        f"net   {amount:.2f}",
        f"tax   {calc_tax(amount):.2f}",
        f"gross {gross(amount):.2f}",
    ]
"""

_PRUNE = """import sys
import time
from pathlib import Path

KEEP_DAYS = 14


def main(folder):
    cutoff = time.time() - KEEP_DAYS * 86400
    for path in Path(folder).glob("*.tar.gz"):
        if path.stat().st_mtime < cutoff:
            path.unlink()
            print("removed", path.name)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/var/backups/db")
"""

_CONVERT = """import sys

from rates import load_rates


def main(argv):
    amount = float(argv[1])
    currency = argv[2].upper()
    rates = load_rates("rates.txt")
    print(f"{amount:.2f} EUR = {amount * rates[currency]:.2f} {currency}")


if __name__ == "__main__":
    main(sys.argv)
"""

_RATES_PY = '''def load_rates(path):
    """Read CODE = RATE lines into a dict."""
    rates = {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            code, value = line.strip().split("=")
            rates[code.strip()] = float(value)
    return rates
'''

_RATES_TXT = "# exported by treasury-sync, do not edit\nUSD = 1.0832\nGBP = 0.8571\n\nJPY = 162.40\n"

_SLUG = """import re


def slugify(text):
    text = text.lower()
    text = re.sub(r"[^a-z0-9]+", "-", text)
    return text.strip("-")
"""

_SLUG_BROKEN = (
    # does not lowercase
    'import re\n\n\ndef slugify(text):\n    text = re.sub(r"[^a-zA-Z0-9]+", "-", text)\n    return text.strip("-")\n',
    # does not strip the ends
    'import re\n\n\ndef slugify(text):\n    return re.sub(r"[^a-z0-9]+", "-", text.lower())\n',
    # does not collapse runs
    'import re\n\n\ndef slugify(text):\n    return re.sub(r"[^a-z0-9]", "-", text.lower()).strip("-")\n',
)

_COUNTLINES = """import argparse


def count_lines(path):
    with open(path, encoding="utf-8") as fh:
        return sum(1 for _ in fh)


def main():
    parser = argparse.ArgumentParser(description="Count lines in a text file.")
    parser.add_argument("path")
    args = parser.parse_args()
    print(count_lines(args.path))


if __name__ == "__main__":
    main()
"""

_WORKER = '''import time


def backoff(attempt):
    """Seconds to wait before retry number `attempt` (0-based)."""
    return 2.5 * 2 ** attempt


def run(job, attempts=3):
    for attempt in range(attempts):
        try:
            return job()
        except OSError:
            time.sleep(backoff(attempt))
    raise RuntimeError("job kept failing")
'''

_WORKER_SOLVED = '''import json
import time
from pathlib import Path

SETTINGS = Path(__file__).with_name("settings.json")


def base_delay():
    return json.loads(SETTINGS.read_text(encoding="utf-8"))["base_delay"]


def backoff(attempt):
    """Seconds to wait before retry number `attempt` (0-based)."""
    return base_delay() * 2 ** attempt


def run(job, attempts=3):
    for attempt in range(attempts):
        try:
            return job()
        except OSError:
            time.sleep(backoff(attempt))
    raise RuntimeError("job kept failing")
'''

_TAX = """def add_tax(amount, rate):
    return round(amount * (1 + rate), 2)
"""

_CART = """from tax import add_tax


def cart_total(prices):
    return add_tax(sum(prices), 0.2)
"""

_INVOICE_TAX = """from tax import add_tax


def invoice_total(lines):
    net = sum(qty * price for qty, price in lines)
    return add_tax(net, 0.07)
"""

_TEMPS = """def to_fahrenheit(celsius):
    return celsius * 9 / 5 + 23


def to_celsius(fahrenheit):
    return (fahrenheit - 32) * 5 / 9
"""

_CHANGELOG = """# Changelog

## Unreleased

### Fixed

- `to_celsius` no longer rounds to whole degrees.

## 0.3.0 - 2026-09-14

### Added

- `to_celsius`.
"""

_CHANGELOG_CHECK = r"""
import temps
assert temps.to_fahrenheit(0) == 32 and temps.to_fahrenheit(100) == 212 and temps.to_fahrenheit(-40) == -40
assert temps.to_celsius(212) == 100
text = open("CHANGELOG.md", encoding="utf-8").read()
assert text.count("## Unreleased") == 1 and text.count("### Fixed") == 1
head, sep, tail = text.partition("## 0.3.0 - 2026-09-14")
assert sep and tail == "\n\n### Added\n\n- `to_celsius`.\n", "the released section changed"
fixed = head.split("### Fixed", 1)[1]
assert "- `to_celsius` no longer rounds to whole degrees." in fixed, "the old entry is gone"
new = [ln for ln in fixed.splitlines() if ln.lstrip().startswith(("-", "*")) and "to_celsius" not in ln]
assert any("fahrenheit" in ln.lower() for ln in new), new
"""

_SLUG_CHECK = (
    _RUN
    + r"""
import os, shutil, tempfile
assert os.path.exists("test_slug.py"), "no test_slug.py"
assert open("slug.py", encoding="utf-8").read() == GOOD, "slug.py was changed"
done = run("-m", "pytest", "-q", "-p", "no:cacheprovider", "test_slug.py")
assert done.returncode == 0, done.stdout[-800:]
for broken in BROKEN:
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copy("test_slug.py", tmp)
        with open(os.path.join(tmp, "slug.py"), "w", encoding="utf-8") as fh:
            fh.write(broken)
        cwd = os.getcwd()
        os.chdir(tmp)
        try:
            done = run("-m", "pytest", "-q", "-p", "no:cacheprovider", "test_slug.py")
        finally:
            os.chdir(cwd)
        assert done.returncode == 1, (broken, done.returncode, done.stdout[-500:])
""".replace("GOOD", repr(_SLUG)).replace("BROKEN", repr(_SLUG_BROKEN))
)

_WORKER_CHECK = (
    _RUN
    + r"""
import json, os, shutil, tempfile
settings = json.load(open("settings.json", encoding="utf-8"))
assert settings.get("base_delay") == 2.5, settings
assert settings.get("queue") == "emails" and settings.get("workers") == 4, settings
assert "2.5" not in open("worker.py", encoding="utf-8").read(), "2.5 is still in worker.py"
done = run("-c", "import worker; print(worker.backoff(1))")
assert done.stdout.strip() == "5.0", done.stdout + done.stderr
with tempfile.TemporaryDirectory() as tmp:
    for name in os.listdir("."):
        if name.endswith((".py", ".json")):
            shutil.copy(name, tmp)
    settings["base_delay"] = 1.0
    with open(os.path.join(tmp, "settings.json"), "w", encoding="utf-8") as fh:
        json.dump(settings, fh)
    os.chdir(tmp)
    done = run("-c", "import worker; print(worker.backoff(3))")
    assert done.stdout.strip() == "8.0", done.stdout + done.stderr
"""
)

UNSEEN: tuple[SuiteTask, ...] = (
    # -- everyday kinds -----------------------------------------------------------------------
    SuiteTask(
        "un-config-value",
        "how many retries does the uploader get? it's set somewhere in the deploy settings",
        {
            "deploy/settings.toml": (
                "[downloader]\nmax_retries = 4\ntimeout = 20\n\n"
                "[uploader]\nmax_retries = 11\ntimeout = 45\nchunk_kb = 512\n"
            ),
            "deploy/README.md": "Settings for the sync daemons. Restart them after editing.\n",
        },
        answer_has=("11",),
        unchanged=True,
    ),
    SuiteTask(
        "un-off-by-one",
        "pytest is failing on test_remainder — looks like an off-by-one in chunks.py. "
        "Can you fix it? Don't touch the tests.",
        {"chunks.py": _CHUNKS, "test_chunks.py": _TEST_CHUNKS},
        check=_RUN
        + (
            "done = run('-m', 'pytest', '-q', '-p', 'no:cacheprovider')\n"
            "assert done.returncode == 0, done.stdout[-800:]\n"
            f"assert open('test_chunks.py', encoding='utf-8').read() == {_TEST_CHUNKS!r}\n"
            "from chunks import chunk\n"
            "assert chunk([1, 2, 3], 1) == [[1], [2], [3]]\n"
            "assert chunk(list(range(7)), 3) == [[0, 1, 2], [3, 4, 5], [6]]\n"
            "assert chunk([9], 5) == [[9]]\n"
        ),
        solution={"chunks.py": _CHUNKS.replace("len(items) - 1", "len(items)")},
    ),
    SuiteTask(
        "un-add-function",
        "Add an rgb_to_hex(r, g, b) function to colors.py, the reverse of hex_to_rgb. "
        "It should return a lowercase string like '#1a2b3c'.",
        {"colors.py": _COLORS},
        check=(
            "from colors import rgb_to_hex, hex_to_rgb, is_grey\n"
            "assert rgb_to_hex(26, 43, 60) == '#1a2b3c'\n"
            "assert rgb_to_hex(0, 0, 0) == '#000000'\n"
            "assert rgb_to_hex(255, 255, 255) == '#ffffff'\n"
            "assert rgb_to_hex(*hex_to_rgb('#a0b1c2')) == '#a0b1c2'\n"
            "assert is_grey('#777777') and not is_grey('#777778')\n"
        ),
        solution={
            "colors.py": _COLORS + '\n\ndef rgb_to_hex(r, g, b):\n    return "#{:02x}{:02x}{:02x}".format(r, g, b)\n'
        },
    ),
    SuiteTask(
        "un-rename",
        "rename calc_tax to vat_for everywhere — it's used in pricing.py and invoice.py",
        {"pricing.py": _PRICING, "invoice.py": _INVOICE_RENAME},
        check=(
            "import pricing, invoice\n"
            "assert not hasattr(pricing, 'calc_tax'), 'calc_tax still defined'\n"
            "assert pricing.vat_for(100) == 20 and pricing.gross(100) == 120\n"
            "assert invoice.invoice_lines(50) == ['net   50.00', 'tax   10.00', 'gross 60.00']\n"
            "for name in ('pricing.py', 'invoice.py'):\n"
            "    assert 'calc_tax' not in open(name, encoding='utf-8').read(), name\n"
        ),
        solution={
            "pricing.py": _PRICING.replace("calc_tax", "vat_for"),
            "invoice.py": _INVOICE_RENAME.replace("calc_tax", "vat_for"),
        },
    ),
    SuiteTask(
        "un-create-file",
        'Please create `data/palette.json` holding a JSON object that maps "primary" to "#0055ff", '
        '"accent" to "#ff8800" and "background" to "#fafafa".',
        {"README.md": "# palette\n\nColour tools for the dashboard.\n"},
        check=(
            "import json\n"
            "data = json.load(open('data/palette.json', encoding='utf-8'))\n"
            "assert data == {'primary': '#0055ff', 'accent': '#ff8800', 'background': '#fafafa'}, data\n"
        ),
        solution={
            "data/palette.json": ('{\n  "primary": "#0055ff",\n  "accent": "#ff8800",\n  "background": "#fafafa"\n}\n')
        },
    ),
    SuiteTask(
        "un-find-definition",
        "Where is the Scheduler class defined? Just tell me the file.",
        {
            "app/__init__.py": "",
            "app/main.py": (
                "from app.core.timing import Scheduler\nfrom app.jobs import nightly_jobs\n\n\n"
                "def main():\n    scheduler = Scheduler(tick_seconds=60)\n"
                "    for job in nightly_jobs():\n        scheduler.add(job)\n    scheduler.start()\n"
            ),
            "app/jobs.py": (
                "def vacuum():\n    print('vacuum')\n\n\ndef reindex():\n    print('reindex')\n\n\n"
                "def nightly_jobs():\n    # the Scheduler runs these in order\n    return [vacuum, reindex]\n"
            ),
            "app/core/__init__.py": "",
            "app/core/timing.py": (
                "import time\n\n\nclass Scheduler:\n    def __init__(self, tick_seconds):\n"
                "        self.tick_seconds = tick_seconds\n        self.jobs = []\n\n"
                "    def add(self, job):\n        self.jobs.append(job)\n\n"
                "    def start(self):\n        while True:\n            for job in self.jobs:\n"
                "                job()\n            time.sleep(self.tick_seconds)\n"
            ),
            "docs/notes.md": "The Scheduler is created in main() with a 60 second tick.\n",
        },
        answer_has=("timing.py",),
        unchanged=True,
    ),
    SuiteTask(
        "un-fix-import",
        "running `python report.py` gives me a ModuleNotFoundError. fix it please",
        {
            "report.py": (
                "from money_utils import format_eur\n\n"
                "totals = [12.5, 7.25, 30]\nprint('Total:', format_eur(sum(totals)))\n"
            ),
            "money.py": 'def format_eur(value):\n    return f"EUR {value:,.2f}"\n',
        },
        check=_RUN
        + (
            "done = run('report.py')\n"
            "assert done.returncode == 0, done.stderr[-500:]\n"
            "assert 'Total: EUR 49.75' in done.stdout, done.stdout\n"
        ),
        solution={
            "report.py": (
                "from money import format_eur\n\ntotals = [12.5, 7.25, 30]\nprint('Total:', format_eur(sum(totals)))\n"
            )
        },
    ),
    SuiteTask(
        "un-summarise",
        "what does prune.py do? one line is enough",
        {"prune.py": _PRUNE},
        answer_has=("14",),
        unchanged=True,
    ),
    # -- harder kinds -------------------------------------------------------------------------
    SuiteTask(
        "un-deep-edit",
        'ledger.py: bucket_age puts an invoice that is exactly 30 days old into "31-60", but it belongs in '
        '"0-30". Fix just that. Leave the rest of the file exactly as it is, no reformatting or other cleanups.',
        {"ledger.py": _LEDGER},
        check=_LEDGER_CHECK,
        solution={"ledger.py": _LEDGER.replace("if days < 30:", "if days <= 30:")},
    ),
    SuiteTask(
        "un-crash-elsewhere",
        "`python convert.py 100 GBP` blows up with a ValueError. rates.txt is generated by another tool, "
        "so don't edit it — fix the code instead.",
        {"convert.py": _CONVERT, "rates.py": _RATES_PY, "rates.txt": _RATES_TXT},
        check=_RUN
        + (
            f"assert open('rates.txt', encoding='utf-8').read() == {_RATES_TXT!r}, 'rates.txt was edited'\n"
            "done = run('convert.py', '100', 'GBP')\n"
            "assert done.returncode == 0 and '85.71 GBP' in done.stdout, done.stdout + done.stderr[-400:]\n"
            "done = run('convert.py', '2', 'jpy')\n"
            "assert done.returncode == 0 and '324.80 JPY' in done.stdout, done.stdout + done.stderr[-400:]\n"
        ),
        solution={
            "rates.py": _RATES_PY.replace(
                '            code, value = line.strip().split("=")\n',
                '            line = line.strip()\n            if not line or line.startswith("#"):\n'
                '                continue\n            code, value = line.split("=")\n',
            )
        },
    ),
    SuiteTask(
        "un-write-test",
        "Write a pytest file test_slug.py for slugify in slug.py. The tests should check that slugify "
        "lowercases the text, turns every run of characters that aren't letters or digits into a single '-', "
        "and strips '-' from both ends — e.g. slugify('  Hello, World! ') == 'hello-world'. "
        "Don't change slug.py.",
        {"slug.py": _SLUG},
        check=_SLUG_CHECK,
        solution={
            "test_slug.py": (
                "from slug import slugify\n\n\ndef test_example():\n"
                "    assert slugify('  Hello, World! ') == 'hello-world'\n\n\n"
                "def test_collapses_runs():\n    assert slugify('a -- b') == 'a-b'\n"
            )
        },
    ),
    SuiteTask(
        "un-cli-flag",
        "add a --skip-blank option to countlines.py so that `python countlines.py --skip-blank sample.txt` "
        "doesn't count empty or whitespace-only lines. Without the flag it should work like it does now.",
        {"countlines.py": _COUNTLINES, "sample.txt": "alpha\n\nbeta\n   \ngamma\n"},
        check=_RUN
        + (
            "open('other.txt', 'w', encoding='utf-8').write('x\\n\\t\\n\\ny\\n')\n"
            "def out(*args):\n"
            "    done = run('countlines.py', *args)\n"
            "    assert done.returncode == 0, done.stderr[-400:]\n"
            "    return done.stdout.strip()\n"
            "assert out('sample.txt') == '5'\n"
            "assert out('--skip-blank', 'sample.txt') == '3'\n"
            "assert out('other.txt') == '4'\n"
            "assert out('other.txt', '--skip-blank') == '2'\n"
        ),
        solution={
            "countlines.py": _COUNTLINES.replace(
                'def count_lines(path):\n    with open(path, encoding="utf-8") as fh:\n'
                "        return sum(1 for _ in fh)\n",
                'def count_lines(path, skip_blank=False):\n    with open(path, encoding="utf-8") as fh:\n'
                "        return sum(1 for line in fh if not (skip_blank and not line.strip()))\n",
            )
            .replace(
                '    parser.add_argument("path")\n',
                '    parser.add_argument("path")\n    parser.add_argument("--skip-blank", action="store_true")\n',
            )
            .replace("count_lines(args.path)", "count_lines(args.path, args.skip_blank)")
        },
    ),
    SuiteTask(
        "un-config-out-of-code",
        "The 2.5 second base delay in worker.py's backoff() is hard-coded. Move it into settings.json as "
        '"base_delay" (value 2.5) and make worker.py read it from settings.json at runtime instead. '
        "Keep the settings that are already in there.",
        {"worker.py": _WORKER, "settings.json": '{\n  "queue": "emails",\n  "workers": 4\n}\n'},
        check=_WORKER_CHECK,
        solution={
            "worker.py": _WORKER_SOLVED,
            "settings.json": '{\n  "queue": "emails",\n  "workers": 4,\n  "base_delay": 2.5\n}\n',
        },
    ),
    SuiteTask(
        "un-search-question",
        "Which environment variables does the code under svc/ read? I need the exact names.",
        {
            "README.md": "# orbit\n\nThe orbit sync service. See svc/.\n",
            "svc/__init__.py": "",
            "svc/db.py": (
                "import os\n\nDB_URL = os.environ.get('ORBIT_DATABASE_URL', 'sqlite:///orbit.db')\n\n\n"
                "def connect():\n    return DB_URL\n"
            ),
            "svc/logs.py": (
                "import logging\nimport os\n\n\ndef setup():\n"
                "    level = os.getenv('ORBIT_LOG_LEVEL', 'INFO')\n    logging.basicConfig(level=level)\n"
            ),
            "svc/auth.py": (
                "import hashlib\nimport hmac\nimport os\n\n\ndef sign(payload: bytes) -> str:\n"
                "    key = os.environ['ORBIT_SIGNING_KEY'].encode()\n"
                "    return hmac.new(key, payload, hashlib.sha256).hexdigest()\n"
            ),
            "svc/cache.py": (
                "TTL_SECONDS = 300\n_store = {}\n\n\ndef get(key):\n    return _store.get(key)\n\n\n"
                "def put(key, value):\n    _store[key] = value\n"
            ),
        },
        answer_has=("ORBIT_DATABASE_URL", "ORBIT_LOG_LEVEL", "ORBIT_SIGNING_KEY"),
        unchanged=True,
    ),
    SuiteTask(
        "un-change-signature",
        "I want add_tax in tax.py to take a region code instead of a rate: add_tax(amount, region), "
        'with the rates kept in a dict in tax.py ("EU" is 0.2, "US" is 0.07); an unknown region should '
        "raise KeyError. Then update the callers: cart.py is EU, invoice.py is US.",
        {"tax.py": _TAX, "cart.py": _CART, "invoice.py": _INVOICE_TAX},
        check=(
            "import inspect\n"
            "import tax, cart, invoice\n"
            "assert list(inspect.signature(tax.add_tax).parameters) == ['amount', 'region']\n"
            "assert tax.add_tax(100, 'EU') == 120 and tax.add_tax(100, 'US') == 107\n"
            "try:\n    tax.add_tax(100, 'XX')\nexcept KeyError:\n    pass\n"
            "else:\n    raise AssertionError('no KeyError for XX')\n"
            "assert cart.cart_total([10, 20]) == 36\n"
            "assert invoice.invoice_total([(2, 50)]) == 107\n"
        ),
        solution={
            "tax.py": (
                'RATES = {"EU": 0.2, "US": 0.07}\n\n\ndef add_tax(amount, region):\n'
                "    return round(amount * (1 + RATES[region]), 2)\n"
            ),
            "cart.py": _CART.replace("0.2)", '"EU")'),
            "invoice.py": _INVOICE_TAX.replace("0.07)", '"US")'),
        },
    ),
    SuiteTask(
        "un-fix-and-changelog",
        "to_fahrenheit in temps.py gives wrong results (0 °C should come out as 32 °F). Fix it, then add a "
        "line about the fix to CHANGELOG.md under the Fixed heading of the Unreleased section.",
        {"temps.py": _TEMPS, "CHANGELOG.md": _CHANGELOG},
        check=_CHANGELOG_CHECK,
        solution={
            "temps.py": _TEMPS.replace("+ 23", "+ 32"),
            "CHANGELOG.md": _CHANGELOG.replace(
                "whole degrees.\n", "whole degrees.\n- `to_fahrenheit` now adds 32 instead of 23.\n"
            ),
        },
    ),
)
