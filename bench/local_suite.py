"""The task sets of `bench/bench_local.py --suite`: small coding tasks for the bundled model.

Each task is a folder of files, a request, and how to judge what the turn left behind:
`check` (Python run in the folder; exit 0 means done), `answer_has` (strings the final
answer must contain), `unchanged` (a question: every file must be left as it was).

    OWN          the first eight, written with the JSON-action adapter (read a config
                 value, fix a failing test, add a function, rename across two files,
                 create a file, find a definition, fix an import, summarise a file)
    REWORDED     the same kinds in other words and other files (no backticks, no
                 "so that X passes" phrasing)
    OTHER_KINDS  tasks of kinds the adapter was not written for (a change deep in a long
                 module, a crash caused in a second module, a new unit test, a CLI flag,
                 a config value moved out of code, a question over several files, a
                 signature change with its callers, a fix noted in a changelog)
    UNSEEN       `bench/local_suite_unseen.py`: written by someone who did not read the
                 adapter's code, and not used while tuning it
    FRESH        `bench/local_suite_fresh.py`: written after the adapter's last change by someone who did not read it
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SuiteTask:
    """One task of the suite: the files to start from, the request, and how to judge it."""

    name: str
    prompt: str
    files: dict[str, str]
    check: str | None = None
    """Python run in the task folder after the turn; exit status 0 means done."""
    answer_has: tuple[str, ...] = ()
    """Strings the final answer must contain (any case)."""
    unchanged: bool = False
    """The task is a question: every file must be left as it was."""
    solution: dict[str, str] | None = None
    """Files that, written over `files`, do the task (`--verify-tasks` checks that the check
    fails on `files` and passes on this); None for questions."""


OWN: tuple[SuiteTask, ...] = (
    SuiteTask(
        "read-config",
        "What port does server.ini configure for http? Answer with the number only.",
        {"server.ini": "[http]\nhost = 0.0.0.0\nport = 8317\n\n[admin]\nport = 9090\n"},
        answer_has=("8317",),
        unchanged=True,
    ),
    SuiteTask(
        "fix-failing-test",
        "The tests fail. Fix the bug in stats.py so that `python -m pytest -q` passes.",
        {
            "stats.py": "def mean(values):\n    return sum(values) / (len(values) - 1)\n",
            "test_stats.py": "from stats import mean\n\n\ndef test_mean():\n    assert mean([2, 4, 6]) == 4\n",
        },
        check="import subprocess, sys; sys.exit(subprocess.run([sys.executable, '-m', 'pytest', '-q']).returncode)",
        solution={"stats.py": "def mean(values):\n    return sum(values) / len(values)\n"},
    ),
    SuiteTask(
        "add-function",
        "Add a function `is_even(n: int) -> bool` to mathx.py that returns True when n is even.",
        {"mathx.py": "def square(n: int) -> int:\n    return n * n\n"},
        check="import mathx; assert mathx.is_even(4) and not mathx.is_even(7) and mathx.square(3) == 9",
        solution={
            "mathx.py": (
                "def square(n: int) -> int:\n    return n * n\n\n\n"
                "def is_even(n: int) -> bool:\n    return n % 2 == 0\n"
            )
        },
    ),
    SuiteTask(
        "rename-two-files",
        "Rename the function fetch_rows to load_rows in db.py and in report.py, which calls it.",
        {
            "db.py": "def fetch_rows():\n    return [1, 2, 3]\n",
            "report.py": "from db import fetch_rows\n\n\ndef total():\n    return sum(fetch_rows())\n",
        },
        check="import db, report; assert report.total() == 6 and db.load_rows() and not hasattr(db, 'fetch_rows')",
        solution={
            "db.py": "def load_rows():\n    return [1, 2, 3]\n",
            "report.py": "from db import load_rows\n\n\ndef total():\n    return sum(load_rows())\n",
        },
    ),
    SuiteTask(
        "create-file",
        "Create a file named VERSION that contains exactly 2.4.1 followed by a newline.",
        {"README.md": "# tool\n"},
        check="import pathlib; assert pathlib.Path('VERSION').read_text() == '2.4.1\\n'",
        solution={"VERSION": "2.4.1\n"},
    ),
    SuiteTask(
        "find-definition",
        "Which file defines the class InvoiceBuilder? Answer with its path.",
        {
            "app.py": "from billing.builder import InvoiceBuilder\n\nprint(InvoiceBuilder().build())\n",
            "billing/__init__.py": "",
            "billing/builder.py": "class InvoiceBuilder:\n    def build(self):\n        return 'invoice'\n",
            "billing/tax.py": "RATE = 0.2\n",
        },
        answer_has=("builder.py",),
        unchanged=True,
    ),
    SuiteTask(
        "fix-import",
        "main.py fails with an ImportError. Fix the import so that `python main.py` prints 42.",
        {
            "helpers.py": "def answer():\n    return 42\n",
            "main.py": "from helper import answer\n\nprint(answer())\n",
        },
        check=(
            "import subprocess, sys; out = subprocess.run([sys.executable, 'main.py'], capture_output=True, text=True)"
            "; assert out.stdout.strip() == '42', out"
        ),
        solution={"main.py": "from helpers import answer\n\nprint(answer())\n"},
    ),
    SuiteTask(
        "summarise-file",
        "Summarise in one line what jobs.py does.",
        {
            "jobs.py": (
                '"""A tiny in-memory job queue."""\n\nimport collections\n\n\nclass JobQueue:\n'
                "    def __init__(self):\n        self._jobs = collections.deque()\n\n"
                "    def push(self, job):\n        self._jobs.append(job)\n\n"
                "    def pop(self):\n        return self._jobs.popleft() if self._jobs else None\n"
            )
        },
        answer_has=("queue",),
        unchanged=True,
    ),
)


_PYTEST = "import subprocess, sys; sys.exit(subprocess.run([sys.executable, '-m', 'pytest', '-q', {}]).returncode)"

REWORDED: tuple[SuiteTask, ...] = (
    SuiteTask(
        "rw-read-config",
        "what's the max upload size set in settings.toml for uploads? just the number please",
        {
            "settings.toml": (
                "[server]\nworkers = 4\n\n[uploads]\nmax_size_mb = 48\ndir = \"/var/uploads\"\n\n"
                "[avatars]\nmax_size_mb = 2\n"
            )
        },
        answer_has=("48",),
        unchanged=True,
    ),
    SuiteTask(
        "rw-fix-off-by-one",
        "pytest is failing on test_pages.py, can you sort it out? The bug is in pages.py, the test is right.",
        {
            "pages.py": (
                "def paginate(items, page, size):\n"
                '    """The items on page `page` (counting from 1) when each page holds `size` items."""\n'
                "    start = (page - 1) * size\n"
                "    return items[start:start + size - 1]\n"
            ),
            "test_pages.py": (
                "from pages import paginate\n\n\n"
                "def test_first_page():\n    assert paginate(list(range(10)), 1, 3) == [0, 1, 2]\n\n\n"
                "def test_last_page():\n    assert paginate(list(range(10)), 4, 3) == [9]\n"
            ),
        },
        check=(
            "from pages import paginate; assert paginate(list('abcdefg'), 2, 2) == ['c', 'd']; "
            + _PYTEST.format("'test_pages.py'")
        ),
        solution={
            "pages.py": (
                "def paginate(items, page, size):\n"
                '    """The items on page `page` (counting from 1) when each page holds `size` items."""\n'
                "    start = (page - 1) * size\n"
                "    return items[start:start + size]\n"
            )
        },
    ),
    SuiteTask(
        "rw-add-function",
        "Could you add fahrenheit_to_celsius(f) to units.py? It should take degrees Fahrenheit and return "
        "degrees Celsius as a float, the opposite of the function that's already there.",
        {"units.py": "def celsius_to_fahrenheit(c):\n    return c * 9 / 5 + 32\n"},
        check=(
            "import units; assert abs(units.fahrenheit_to_celsius(212) - 100) < 1e-9"
            "; assert abs(units.fahrenheit_to_celsius(-40) + 40) < 1e-9; assert units.celsius_to_fahrenheit(0) == 32"
        ),
        solution={
            "units.py": (
                "def celsius_to_fahrenheit(c):\n    return c * 9 / 5 + 32\n\n\n"
                "def fahrenheit_to_celsius(f):\n    return (f - 32) * 5 / 9\n"
            )
        },
    ),
    SuiteTask(
        "rw-rename-two-files",
        "please rename get_user to find_user everywhere. it's defined in users.py and views.py uses it",
        {
            "users.py": "USERS = {1: 'ada', 2: 'linus'}\n\n\ndef get_user(user_id):\n    return USERS.get(user_id)\n",
            "views.py": (
                "from users import get_user\n\n\ndef profile(user_id):\n"
                "    name = get_user(user_id)\n    return f'<h1>{name}</h1>' if name else '<h1>not found</h1>'\n"
            ),
        },
        check=(
            "import pathlib, users, views; assert users.find_user(1) == 'ada' and not hasattr(users, 'get_user')"
            "; assert views.profile(2) == '<h1>linus</h1>' and views.profile(9) == '<h1>not found</h1>'"
            "; assert 'get_user' not in pathlib.Path('views.py').read_text()"
        ),
        solution={
            "users.py": "USERS = {1: 'ada', 2: 'linus'}\n\n\ndef find_user(user_id):\n    return USERS.get(user_id)\n",
            "views.py": (
                "from users import find_user\n\n\ndef profile(user_id):\n"
                "    name = find_user(user_id)\n    return f'<h1>{name}</h1>' if name else '<h1>not found</h1>'\n"
            ),
        },
    ),
    SuiteTask(
        "rw-create-file",
        "I need a file called requirements.txt listing two packages, requests and click, one per line "
        "(no version pins).",
        {"fetch.py": "import click\nimport requests\n"},
        check=(
            "import pathlib; lines = pathlib.Path('requirements.txt').read_text().split()"
            "; assert sorted(lines) == ['click', 'requests'], lines"
        ),
        solution={"requirements.txt": "requests\nclick\n"},
    ),
    SuiteTask(
        "rw-find-definition",
        "where is parse_duration defined? give me the file path",
        {
            "cli.py": (
                "import sys\n\nfrom timeutil import parse_duration\n\n"
                "print(parse_duration(sys.argv[1]))\n"
            ),
            "timeutil/__init__.py": "from timeutil.parsing import parse_duration\n",
            "timeutil/parsing.py": (
                "UNITS = {'s': 1, 'm': 60, 'h': 3600}\n\n\n"
                "def parse_duration(text):\n    return int(text[:-1]) * UNITS[text[-1]]\n"
            ),
            "timeutil/formatting.py": "def format_duration(seconds):\n    return f'{seconds // 60}m{seconds % 60}s'\n",
        },
        answer_has=("parsing.py",),
        unchanged=True,
    ),
    SuiteTask(
        "rw-fix-import",
        "running python report.py blows up with ModuleNotFoundError, please fix it. It should print $1,234.50",
        {
            "formatting.py": "def money(amount):\n    return f'${amount:,.2f}'\n",
            "report.py": "from formating import money\n\nprint(money(1234.5))\n",
        },
        check=(
            "import subprocess, sys"
            "; out = subprocess.run([sys.executable, 'report.py'], capture_output=True, text=True)"
            "; assert out.stdout.strip() == '$1,234.50', out"
        ),
        solution={"report.py": "from formatting import money\n\nprint(money(1234.5))\n"},
    ),
    SuiteTask(
        "rw-summarise-file",
        "give me a one-line summary of ratelimit.py",
        {
            "ratelimit.py": (
                "import time\n\n\nclass TokenBucket:\n"
                "    def __init__(self, rate, capacity):\n        self.rate = rate\n"
                "        self.capacity = capacity\n        self.tokens = capacity\n"
                "        self.updated = time.monotonic()\n\n"
                "    def allow(self):\n        now = time.monotonic()\n"
                "        self.tokens = min(self.capacity, self.tokens + (now - self.updated) * self.rate)\n"
                "        self.updated = now\n        if self.tokens >= 1:\n            self.tokens -= 1\n"
                "            return True\n        return False\n"
            )
        },
        answer_has=("rate",),
        unchanged=True,
    ),
)


_INVENTORY = r'''"""Stock keeping for a small warehouse: items, locations, moves and reports."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field

CURRENCY = "EUR"
SKU_PREFIXES = ("HW", "EL", "PL", "GD")


class StockError(Exception):
    """Raised when a stock operation cannot be done."""


def parse_sku(sku: str) -> tuple[str, int]:
    """Split a SKU such as 'HW-0042' into its prefix and number."""
    prefix, _, number = sku.partition("-")
    if prefix not in SKU_PREFIXES or not number.isdigit():
        raise StockError(f"bad SKU: {sku!r}")
    return prefix, int(number)


def format_money(cents: int) -> str:
    """Format an amount in cents, e.g. 123456 -> '1,234.56 EUR'."""
    return f"{cents / 100:,.2f} {CURRENCY}"


@dataclass
class Item:
    sku: str
    name: str
    unit_price_cents: int
    quantity: int = 0
    reorder_level: int = 5

    def value_cents(self) -> int:
        return self.unit_price_cents * self.quantity

    def category(self) -> str:
        return parse_sku(self.sku)[0]


@dataclass
class Location:
    code: str
    capacity: int
    skus: dict[str, int] = field(default_factory=dict)

    def used(self) -> int:
        return sum(self.skus.values())

    def free(self) -> int:
        return self.capacity - self.used()

    def put(self, sku: str, count: int) -> None:
        if count <= 0:
            raise StockError("count must be positive")
        if count > self.free():
            raise StockError(f"location {self.code} has room for {self.free()}, not {count}")
        self.skus[sku] = self.skus.get(sku, 0) + count

    def take(self, sku: str, count: int) -> None:
        held = self.skus.get(sku, 0)
        if count > held:
            raise StockError(f"location {self.code} holds {held} of {sku}, not {count}")
        if count == held:
            del self.skus[sku]
        else:
            self.skus[sku] = held - count


class Warehouse:
    """Items by SKU and the locations that hold them."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.items: dict[str, Item] = {}
        self.locations: dict[str, Location] = {}
        self.history: list[tuple[str, str, int]] = []

    def add_location(self, code: str, capacity: int) -> Location:
        if code in self.locations:
            raise StockError(f"location {code} exists")
        location = Location(code, capacity)
        self.locations[code] = location
        return location

    def add_item(self, item: Item) -> None:
        parse_sku(item.sku)
        if item.sku in self.items:
            raise StockError(f"item {item.sku} exists")
        self.items[item.sku] = item

    def receive(self, sku: str, count: int, location_code: str) -> None:
        item = self._item(sku)
        self._location(location_code).put(sku, count)
        item.quantity += count
        self.history.append(("receive", sku, count))

    def ship(self, sku: str, count: int, location_code: str) -> None:
        item = self._item(sku)
        self._location(location_code).take(sku, count)
        item.quantity -= count
        self.history.append(("ship", sku, count))

    def move(self, sku: str, count: int, source: str, target: str) -> None:
        self._location(source).take(sku, count)
        try:
            self._location(target).put(sku, count)
        except StockError:
            self._location(source).put(sku, count)
            raise
        self.history.append(("move", sku, count))

    def total_value_cents(self) -> int:
        return sum(item.value_cents() for item in self.items.values())

    def value_by_category(self) -> dict[str, int]:
        totals: dict[str, int] = {}
        for item in self.items.values():
            totals[item.category()] = totals.get(item.category(), 0) + item.value_cents()
        return dict(sorted(totals.items()))

    def low_stock(self) -> list[str]:
        """The SKUs that need reordering, in SKU order."""
        low = []
        for sku, item in sorted(self.items.items()):
            if item.quantity < item.reorder_level:
                low.append(sku)
        return low

    def where_is(self, sku: str) -> dict[str, int]:
        return {code: loc.skus[sku] for code, loc in sorted(self.locations.items()) if sku in loc.skus}

    def _item(self, sku: str) -> Item:
        try:
            return self.items[sku]
        except KeyError:
            raise StockError(f"unknown item {sku}") from None

    def _location(self, code: str) -> Location:
        try:
            return self.locations[code]
        except KeyError:
            raise StockError(f"unknown location {code}") from None


def to_csv(warehouse: Warehouse) -> str:
    """The items as CSV: sku, name, unit price in cents, quantity, reorder level."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["sku", "name", "unit_price_cents", "quantity", "reorder_level"])
    for sku, item in sorted(warehouse.items.items()):
        writer.writerow([sku, item.name, item.unit_price_cents, item.quantity, item.reorder_level])
    return out.getvalue()


def from_csv(name: str, text: str) -> Warehouse:
    """A warehouse holding the items of `to_csv`'s output (no locations)."""
    warehouse = Warehouse(name)
    for row in csv.DictReader(io.StringIO(text)):
        warehouse.add_item(
            Item(
                row["sku"],
                row["name"],
                int(row["unit_price_cents"]),
                int(row["quantity"]),
                int(row["reorder_level"]),
            )
        )
    return warehouse


def summary(warehouse: Warehouse) -> str:
    """A few lines for the daily report."""
    lines = [f"Warehouse {warehouse.name}"]
    lines.append(f"  items: {len(warehouse.items)}")
    lines.append(f"  value: {format_money(warehouse.total_value_cents())}")
    for category, cents in warehouse.value_by_category().items():
        lines.append(f"    {category}: {format_money(cents)}")
    low = warehouse.low_stock()
    lines.append(f"  to reorder: {', '.join(low) if low else 'nothing'}")
    return "\n".join(lines)
'''

_INVENTORY_CHECK = r"""
import pathlib
old = ORIG.splitlines()
new = pathlib.Path('inventory.py').read_text().splitlines()
assert len(new) == len(old), 'lines were added or removed'
changed = [i for i, (a, b) in enumerate(zip(old, new)) if a != b]
target = [i for i, line in enumerate(old) if 'item.quantity < item.reorder_level' in line]
assert changed == target, f'changed lines {changed}, expected only {target}'
import inventory
w = inventory.Warehouse('t')
w.add_item(inventory.Item('HW-0001', 'bolt', 10, 5, 5))
w.add_item(inventory.Item('HW-0002', 'nut', 10, 4, 5))
w.add_item(inventory.Item('HW-0003', 'washer', 10, 6, 5))
assert w.low_stock() == ['HW-0001', 'HW-0002'], w.low_stock()
"""

_PRICING = (
    "def parse_percent(text):\n"
    '    """\'15%\' -> 15.0"""\n'
    "    return text.strip().rstrip('%')\n\n\n"
    "def apply_discount(price, discount):\n"
    "    pct = parse_percent(discount)\n"
    "    return round(price * (1 - pct / 100), 2)\n"
)

_TEXT = (
    "import re\n\n\n"
    "def slugify(text):\n"
    '    """\'Hello, World!\' -> \'hello-world\'"""\n'
    "    text = text.lower()\n"
    '    text = re.sub(r"[^a-z0-9\\s-]", "", text)\n'
    '    text = re.sub(r"[\\s-]+", "-", text)\n'
    '    return text.strip("-")\n'
)

_SLUG_TESTS = (
    "from text import slugify\n\n\n"
    "def test_lowercases():\n    assert slugify('Hello') == 'hello'\n\n\n"
    "def test_spaces_become_hyphens():\n    assert slugify('Hello  big World') == 'hello-big-world'\n\n\n"
    "def test_punctuation_dropped():\n    assert slugify('Hello, World!') == 'hello-world'\n"
)

_SLUG_CHECK = r"""
import pathlib, shutil, subprocess, sys, tempfile
assert pathlib.Path('test_text.py').is_file(), 'no test_text.py'
def run(source):
    folder = tempfile.mkdtemp()
    shutil.copy('test_text.py', folder)
    pathlib.Path(folder, 'text.py').write_text(source)
    argv = [sys.executable, '-m', 'pytest', '-q', '-p', 'no:cacheprovider', 'test_text.py']
    return subprocess.run(argv, cwd=folder, capture_output=True).returncode
assert run(GOOD) == 0, 'the tests fail on the correct slugify'
for bad in BROKEN:
    assert run(bad) != 0, 'the tests pass on a broken slugify:\n' + bad
"""

_WORDCOUNT = (
    "import argparse\nimport collections\nimport re\n\n\n"
    "def count_words(text):\n"
    "    return collections.Counter(re.findall(r\"[a-z']+\", text.lower()))\n\n\n"
    "def main(argv=None):\n"
    '    parser = argparse.ArgumentParser(description="Print how often each word occurs in a text file.")\n'
    '    parser.add_argument("path")\n'
    "    args = parser.parse_args(argv)\n"
    '    with open(args.path, encoding="utf-8") as f:\n'
    "        counts = count_words(f.read())\n"
    "    for word, n in counts.most_common():\n"
    '        print(f"{word} {n}")\n\n\n'
    'if __name__ == "__main__":\n    main()\n'
)

_WORDCOUNT_CHECK = r"""
import os, subprocess, sys, tempfile
path = os.path.join(tempfile.mkdtemp(), 'words.txt')
with open(path, 'w') as f:
    f.write('The cat and the dog and the bird\n')
def counts(*flags):
    argv = [sys.executable, 'wordcount.py', path, *flags]
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    return {w: int(n) for w, n in (line.split() for line in out.splitlines() if line.strip())}
assert counts() == {'the': 3, 'and': 2, 'cat': 1, 'dog': 1, 'bird': 1}, counts()
assert counts('--min-count', '2') == {'the': 3, 'and': 2}, counts('--min-count', '2')
assert counts('--min-count', '3') == {'the': 3}, counts('--min-count', '3')
"""

_CLIENT = (
    "import json\nimport pathlib\nimport urllib.request\n\n"
    'CONFIG_PATH = pathlib.Path(__file__).with_name("config.json")\n'
    "TIMEOUT_SECONDS = 5\n\n\n"
    "def load_config():\n"
    '    return json.loads(CONFIG_PATH.read_text(encoding="utf-8"))\n\n\n'
    "def fetch(path):\n"
    "    config = load_config()\n"
    '    url = config["base_url"].rstrip("/") + "/" + path.lstrip("/")\n'
    "    with urllib.request.urlopen(url, timeout=TIMEOUT_SECONDS) as response:\n"
    '        return json.loads(response.read().decode("utf-8"))\n'
)

_CLIENT_CHECK = r"""
import ast, json, pathlib, shutil, subprocess, sys, tempfile
source = pathlib.Path('client.py').read_text()
nodes = ast.walk(ast.parse(source))
numbers = [n.value for n in nodes if isinstance(n, ast.Constant) and type(n.value) in (int, float)]
assert 5 not in numbers, 'the timeout is still written in client.py'
config = json.loads(pathlib.Path('config.json').read_text())
assert config.get('timeout') == 5 and config['base_url'] == 'https://api.example.com', config
folder = tempfile.mkdtemp()
shutil.copy('client.py', folder)
config['timeout'] = 12
pathlib.Path(folder, 'config.json').write_text(json.dumps(config))
PROBE = '''
import io, json, urllib.request
seen = []
def fake(url, *args, **kwargs):
    seen.append([kwargs.get('timeout', args[1] if len(args) > 1 else None), getattr(url, 'full_url', url)])
    return io.BytesIO(b'{"ok": true}')
urllib.request.urlopen = fake
import client
assert client.fetch('/items') == {'ok': True}
print(json.dumps(seen[0]))
'''
out = subprocess.run([sys.executable, '-c', PROBE], cwd=folder, capture_output=True, text=True)
assert out.returncode == 0, out
timeout, url = json.loads(out.stdout)
assert float(timeout) == 12 and url == 'https://api.example.com/items', out.stdout
"""

_MONEY_CHECK = r"""
import money, cart, invoice
assert money.format_price(3, 'EUR') == '3.00 EUR', money.format_price(3, 'EUR')
assert money.format_price(1234.5, 'USD') == '1,234.50 USD'
try:
    money.format_price(3)
except TypeError:
    pass
else:
    raise AssertionError('currency is not a required parameter')
assert cart.total_line([1, 2.5]) == 'Total: 3.50 USD', cart.total_line([1, 2.5])
assert invoice.lines([('pen', 2), ('ink', 10.25)]) == ['pen: 2.00 USD', 'ink: 10.25 USD']
"""

_CHANGELOG = (
    "# Changelog\n\n## Unreleased\n\n## 1.2.0\n\n- Trips can be exported to CSV.\n\n"
    "## 1.1.0\n\n- Distances are shown in miles when the locale asks for it.\n"
)

_CHANGELOG_CHECK = r"""
import pathlib, trips
assert trips.average_speed(100, 2) == 50 and trips.average_speed(30, 0.5) == 60
text = pathlib.Path('CHANGELOG.md').read_text()
for old in ('# Changelog', '## Unreleased', '## 1.2.0', '- Trips can be exported to CSV.', '## 1.1.0',
            '- Distances are shown in miles when the locale asks for it.'):
    assert old in text, f'lost: {old}'
assert text.index('## Unreleased') < text.index('## 1.2.0') < text.index('## 1.1.0')
entry = text.split('## Unreleased', 1)[1].split('## 1.2.0', 1)[0]
assert any(line.strip() for line in entry.splitlines()), 'no entry under Unreleased'
"""

OTHER_KINDS: tuple[SuiteTask, ...] = (
    SuiteTask(
        "ok-deep-change",
        "In inventory.py, Warehouse.low_stock() should also list items whose quantity is exactly equal to "
        "their reorder level; right now it only lists items strictly below it. Change only that comparison "
        "and leave every other line of the file exactly as it is.",
        {"inventory.py": _INVENTORY},
        check=f"ORIG = {_INVENTORY!r}\n{_INVENTORY_CHECK}",
        solution={
            "inventory.py": _INVENTORY.replace(
                "if item.quantity < item.reorder_level:", "if item.quantity <= item.reorder_level:"
            )
        },
    ),
    SuiteTask(
        "ok-crash-second-module",
        "python app.py crashes with a TypeError. Find the cause and fix it; it should print 72.0 and then 25.0.",
        {
            "app.py": (
                "from pricing import apply_discount\n\n"
                "print(apply_discount(80.0, '10%'))\nprint(apply_discount(50.0, '50%'))\n"
            ),
            "pricing.py": _PRICING,
        },
        check=(
            "import subprocess, sys; out = subprocess.run([sys.executable, 'app.py'], capture_output=True, text=True)"
            "; assert out.stdout.split() == ['72.0', '25.0'], out"
            "; import pricing; assert pricing.apply_discount(200, '25%') == 150"
        ),
        solution={
            "pricing.py": _PRICING.replace("return text.strip().rstrip('%')", "return float(text.strip().rstrip('%'))")
        },
    ),
    SuiteTask(
        "ok-write-tests",
        "Write pytest tests for slugify (it's in text.py) in a new file test_text.py. slugify lowercases the "
        "text, drops punctuation, and turns spaces into single hyphens: 'Hello, World!' becomes 'hello-world'. "
        "The tests should check the lowercasing and the spaces-to-hyphens part. Don't change text.py.",
        {"text.py": _TEXT},
        check=(
            f"GOOD = {_TEXT!r}\n"
            f"BROKEN = [GOOD.replace('    text = text.lower()\\n', ''), GOOD.replace('[\\\\s-]+', '-+')]\n"
            + _SLUG_CHECK
        ),
        solution={"test_text.py": _SLUG_TESTS},
    ),
    SuiteTask(
        "ok-cli-flag",
        "Add a --min-count N option to wordcount.py so that it only prints words that occur at least N times. "
        "Without the option it should keep printing every word, as now. Usage: python wordcount.py FILE --min-count 2",
        {"wordcount.py": _WORDCOUNT, "notes.txt": "to be or not to be\n"},
        check=_WORDCOUNT_CHECK,
        solution={
            "wordcount.py": _WORDCOUNT.replace(
                '    parser.add_argument("path")\n',
                '    parser.add_argument("path")\n    parser.add_argument("--min-count", type=int, default=1)\n',
            ).replace("    for word, n in counts.most_common():\n", "    for word, n in counts.most_common():\n"
                      "        if n < args.min_count:\n            continue\n")
        },
    ),
    SuiteTask(
        "ok-config-to-file",
        "The request timeout (5 seconds) is hard-coded in client.py. Move it into config.json under the key "
        '"timeout" and make client.py read it from config.json when it makes a request, so the timeout can be '
        "changed without touching the code.",
        {"client.py": _CLIENT, "config.json": '{\n  "base_url": "https://api.example.com"\n}\n'},
        check=_CLIENT_CHECK,
        solution={
            "client.py": _CLIENT.replace("TIMEOUT_SECONDS = 5\n", "").replace(
                "timeout=TIMEOUT_SECONDS", 'timeout=config["timeout"]'
            ),
            "config.json": '{\n  "base_url": "https://api.example.com",\n  "timeout": 5\n}\n',
        },
    ),
    SuiteTask(
        "ok-find-callers",
        "Which functions call send_alert? Search the project and list the names of the calling functions.",
        {
            "alerts.py": (
                "def format_alert(level, text):\n    return f'[{level}] {text}'\n\n\n"
                "def send_alert(level, text):\n    print(format_alert(level, text))\n\n\n"
                "def send_alert_digest(items):\n    print('\\n'.join(items))\n"
            ),
            "monitor/__init__.py": "",
            "monitor/disk.py": (
                "import shutil\n\nfrom alerts import send_alert\n\n\n"
                "def disk_usage(path='/'):\n    usage = shutil.disk_usage(path)\n"
                "    return usage.used / usage.total\n\n\n"
                "def check_disk(path='/'):\n    if disk_usage(path) > 0.9:\n"
                "        send_alert('warn', f'disk {path} is over 90% full')\n"
            ),
            "monitor/cpu.py": (
                "import os\n\nimport alerts\n\n\n"
                "def load_average():\n    return os.getloadavg()[0]\n\n\n"
                "def check_cpu_load(limit=8.0):\n    load = load_average()\n    if load > limit:\n"
                "        alerts.send_alert('crit', f'load {load:.1f}')\n    return load\n"
            ),
            "backup.py": (
                "import subprocess\n\nfrom alerts import send_alert, send_alert_digest\n\n\n"
                "def run_backup(target):\n    done = subprocess.run(['rsync', '-a', 'data/', target])\n"
                "    if done.returncode != 0:\n        send_alert('crit', f'backup to {target} failed')\n\n\n"
                "def weekly_report(lines):\n    send_alert_digest(lines)\n"
            ),
            "README.md": "# ops\n\nSmall health checks. Alerts go through alerts.py.\n",
        },
        answer_has=("check_disk", "check_cpu_load", "run_backup"),
        unchanged=True,
    ),
    SuiteTask(
        "ok-signature-change",
        "Give format_price in money.py a second, required parameter currency (after amount), and make it return "
        "the amount with two decimals, thousands separators and the currency code after it, e.g. "
        "format_price(1234.5, 'USD') == '1,234.50 USD'. Then update every caller in the project to pass 'USD'.",
        {
            "money.py": "def format_price(amount):\n    return f'${amount:,.2f}'\n",
            "cart.py": (
                "from money import format_price\n\n\n"
                "def total_line(prices):\n    return 'Total: ' + format_price(sum(prices))\n"
            ),
            "invoice.py": (
                "import money\n\n\n"
                "def lines(items):\n    return [f'{name}: {money.format_price(price)}' for name, price in items]\n"
            ),
        },
        check=_MONEY_CHECK,
        solution={
            "money.py": "def format_price(amount, currency):\n    return f'{amount:,.2f} {currency}'\n",
            "cart.py": (
                "from money import format_price\n\n\n"
                "def total_line(prices):\n    return 'Total: ' + format_price(sum(prices), 'USD')\n"
            ),
            "invoice.py": (
                "import money\n\n\n"
                "def lines(items):\n"
                "    return [f'{name}: {money.format_price(price, \"USD\")}' for name, price in items]\n"
            ),
        },
    ),
    SuiteTask(
        "ok-fix-and-changelog",
        "average_speed in trips.py gives the wrong result: for 100 km in 2 hours it returns 0.02 instead of 50 "
        "(km per hour). Fix it, then add a line describing the fix under the Unreleased heading in CHANGELOG.md, "
        "keeping everything else in the changelog.",
        {
            "trips.py": (
                "def average_speed(distance_km, hours):\n"
                '    """Average speed in km per hour."""\n'
                "    return hours / distance_km\n"
            ),
            "CHANGELOG.md": _CHANGELOG,
        },
        check=_CHANGELOG_CHECK,
        solution={
            "trips.py": (
                "def average_speed(distance_km, hours):\n"
                '    """Average speed in km per hour."""\n'
                "    return distance_km / hours\n"
            ),
            "CHANGELOG.md": _CHANGELOG.replace(
                "## Unreleased\n\n", "## Unreleased\n\n- Fixed average_speed dividing the wrong way round.\n\n"
            ),
        },
    ),
)


def task_sets() -> dict[str, tuple[SuiteTask, ...]]:
    """Every set by name (`--set own,reworded,other,unseen,fresh`)."""
    from local_suite_fresh import FRESH
    from local_suite_unseen import UNSEEN

    return {"own": OWN, "reworded": REWORDED, "other": OTHER_KINDS, "unseen": UNSEEN, "fresh": FRESH}
