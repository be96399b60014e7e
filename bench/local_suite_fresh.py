"""Fresh held-out tasks for `bench/bench_local.py --suite --set fresh` (see bench/local_suite.py).

Written after the adapter's last change by someone who did not read it: eight tasks of the
first kinds and eight of the other kinds, in new domains and new words.
"""

from __future__ import annotations

import hashlib

from local_suite import SuiteTask


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


_PYTEST = "[sys.executable, '-m', 'pytest', '-q', '-p', 'no:cacheprovider']"

# ---------------------------------------------------------------------------------------------
# First kinds
# ---------------------------------------------------------------------------------------------

_UPLOADER_TOML = r"""# Photo archive sync settings
[uploader]
bucket = "photo-archive"
chunk_size_kb = 512
max_retries = 11
backoff_seconds = 2.5
verify_checksums = true

[thumbnailer]
sizes = [128, 512, 1024]
max_retries = 4
"""

_LOGGING_JSON = r"""{
  "level": "INFO",
  "file": "logs/sync.log",
  "rotate_mb": 20
}
"""

_SYNC_PY = r'''"""Upload new photos to the archive bucket."""

import json
import tomllib
from pathlib import Path

SETTINGS = Path(__file__).parent / "settings"


def load_settings() -> dict:
    with open(SETTINGS / "uploader.toml", "rb") as f:
        config = tomllib.load(f)
    config["logging"] = json.loads((SETTINGS / "logging.json").read_text())
    return config


def upload(path: Path, config: dict) -> None:
    attempts = config["uploader"]["max_retries"] + 1
    for _ in range(attempts):
        ...  # the real upload lives in the client library
'''

_SEATING = r'''"""Seat labels for the community theatre's ticket printer."""

import string


def row_letters(rows: int) -> list[str]:
    return list(string.ascii_uppercase[:rows])


def seat_labels(row: str, seats: int) -> list[str]:
    return [f"{row}{n}" for n in range(1, seats)]


def all_seats(rows: int, seats_per_row: int) -> list[str]:
    return [label for r in row_letters(rows) for label in seat_labels(r, seats_per_row)]
'''

_SEATING_TEST = r"""from seating import all_seats, row_letters, seat_labels


def test_row_letters():
    assert row_letters(3) == ["A", "B", "C"]


def test_seat_labels():
    assert seat_labels("C", 4) == ["C1", "C2", "C3", "C4"]


def test_all_seats_count():
    assert len(all_seats(5, 12)) == 60
"""

_KITCHEN_UNITS = r'''"""Unit conversions for the recipe scaler."""

ML_PER_CUP = 236.588
ML_PER_TBSP = 14.787
ML_PER_TSP = 4.929


def cups_to_ml(cups: float) -> float:
    return round(cups * ML_PER_CUP, 1)


def tbsp_to_ml(tbsp: float) -> float:
    return round(tbsp * ML_PER_TBSP, 1)


def tsp_to_ml(tsp: float) -> float:
    return round(tsp * ML_PER_TSP, 1)
'''

_GEO = r'''"""Distance helpers for the hiking planner."""

import math

EARTH_RADIUS_KM = 6371.0


def haversine_km(a: tuple[float, float], b: tuple[float, float]) -> float:
    """Distance in km between two (lat, lon) points given in degrees."""
    lat1, lon1 = map(math.radians, a)
    lat2, lon2 = map(math.radians, b)
    h = math.sin((lat2 - lat1) / 2) ** 2 + math.cos(lat1) * math.cos(lat2) * math.sin((lon2 - lon1) / 2) ** 2
    return 2 * EARTH_RADIUS_KM * math.asin(math.sqrt(h))


def km_to_miles(km: float) -> float:
    return km * 0.621371
'''

_TRAIL = r'''"""Trail lengths from the GPS points in a route file."""

from geo import haversine_km, km_to_miles


def trail_length_km(points: list[tuple[float, float]]) -> float:
    return sum(haversine_km(p, q) for p, q in zip(points, points[1:]))


def trail_length_miles(points: list[tuple[float, float]]) -> float:
    return km_to_miles(trail_length_km(points))


def longest_leg_km(points: list[tuple[float, float]]) -> float:
    return max((haversine_km(p, q) for p, q in zip(points, points[1:])), default=0.0)
'''

_BUILD = r'''"""Render every post in posts/ to site/<slug>.html."""

from pathlib import Path

from slugify import slugify


def build(src: Path = Path("posts"), out: Path = Path("site")) -> list[Path]:
    out.mkdir(exist_ok=True)
    written = []
    for post in sorted(src.glob("*.md")):
        title, _, body = post.read_text(encoding="utf-8").partition("\n")
        target = out / f"{slugify(title.lstrip('# '))}.html"
        target.write_text(f"<h1>{title.lstrip('# ')}</h1>\n<pre>{body}</pre>\n", encoding="utf-8")
        written.append(target)
    return written


if __name__ == "__main__":
    for path in build():
        print(path)
'''

_CATALOG_INIT = r'''"""The branch library's book catalogue."""

from .codes import normalize_isbn
from .lookup import find_book

__all__ = ["find_book", "normalize_isbn"]
'''

_CATALOG_CODES = r'''"""ISBN handling."""


def normalize_isbn(raw: str) -> str:
    """Digits only (and a trailing X for ISBN-10), no hyphens or spaces."""
    cleaned = "".join(ch for ch in raw.upper() if ch.isdigit() or ch == "X")
    if len(cleaned) not in (10, 13):
        raise ValueError(f"not an ISBN: {raw!r}")
    return cleaned


def isbn10_to_13(isbn10: str) -> str:
    core = "978" + isbn10[:9]
    total = sum(int(d) * (1 if i % 2 == 0 else 3) for i, d in enumerate(core))
    return core + str((10 - total % 10) % 10)
'''

_CATALOG_LOOKUP = r'''"""Find books on the shelves."""

from . import codes

SHELVES = {
    "9780140449136": ("Crime and Punishment", "F DOS"),
    "9780261103573": ("The Fellowship of the Ring", "F TOL"),
}


def _normalize_title(title: str) -> str:
    return " ".join(title.lower().split())


def find_book(isbn: str) -> tuple[str, str] | None:
    key = codes.normalize_isbn(isbn)
    if len(key) == 10:
        key = codes.isbn10_to_13(key)
    return SHELVES.get(key)


def find_by_title(title: str) -> list[str]:
    wanted = _normalize_title(title)
    return [isbn for isbn, (t, _) in SHELVES.items() if _normalize_title(t) == wanted]
'''

_CHECKOUT = r'''"""Front-desk checkout script."""

import sys

from catalog import find_book, normalize_isbn

if __name__ == "__main__":
    for raw in sys.argv[1:]:
        print(normalize_isbn(raw), find_book(raw) or "not on the shelves")
'''

_PLANTCAL = r'''"""Calendar helpers for the watering planner."""

from datetime import date, timedelta


def days_between(a: date, b: date) -> int:
    return abs((b - a).days)


def next_watering_day(last: date, every_days: int) -> date:
    return last + timedelta(days=every_days)
'''

_SCHEDULE = r'''"""Print when each plant needs water next."""

from datetime import date

from plantcal import next_watering

PLANTS = [
    ("fern", date(2024, 5, 2), 3),
    ("cactus", date(2024, 4, 20), 21),
    ("basil", date(2024, 5, 6), 1),
]


def main() -> None:
    for name, last, every in PLANTS:
        print(f"{name:<8} {next_watering(last, every).isoformat()}")


if __name__ == "__main__":
    main()
'''

_BACKUP_ROTATE = r'''"""Keep the backups folder from filling the disk."""

import argparse
import re
from datetime import date, datetime
from pathlib import Path

NAME = re.compile(r"^db-(\d{8})\.tar\.gz$")


def backup_dates(folder: Path) -> dict[date, Path]:
    found = {}
    for path in folder.iterdir():
        match = NAME.match(path.name)
        if match:
            found[datetime.strptime(match.group(1), "%Y%m%d").date()] = path
    return found


def to_keep(days: list[date], daily: int, weekly: int) -> set[date]:
    newest_first = sorted(days, reverse=True)
    keep = set(newest_first[:daily])
    weeks: set[tuple[int, int]] = set()
    for day in newest_first:
        week = tuple(day.isocalendar())[:2]
        if week not in weeks and len(weeks) < weekly:
            weeks.add(week)
            keep.add(day)
    return keep


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("folder", type=Path)
    parser.add_argument("--daily", type=int, default=7)
    parser.add_argument("--weekly", type=int, default=4)
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args()
    found = backup_dates(args.folder)
    keep = to_keep(list(found), args.daily, args.weekly)
    for day, path in sorted(found.items()):
        if day in keep:
            continue
        print("would delete" if args.dry_run else "deleting", path.name)
        if not args.dry_run:
            path.unlink()


if __name__ == "__main__":
    main()
'''

FIRST_KINDS: tuple[SuiteTask, ...] = (
    SuiteTask(
        "fr-read-config",
        "how many times does the uploader retry before it gives up? the config is somewhere under settings/",
        {"settings/uploader.toml": _UPLOADER_TOML, "settings/logging.json": _LOGGING_JSON, "sync.py": _SYNC_PY},
        answer_has=("11",),
        unchanged=True,
    ),
    SuiteTask(
        "fr-off-by-one",
        "test_seat_labels fails when I run `pytest`. pretty sure it's an off-by-one in seating.py. "
        "the test itself is right, fix the code",
        {"seating.py": _SEATING, "test_seating.py": _SEATING_TEST},
        check=(
            "import hashlib, pathlib, subprocess, sys\n"
            "test = pathlib.Path('test_seating.py').read_text(encoding='utf-8')\n"
            f"assert hashlib.sha256(test.encode()).hexdigest() == {_sha(_SEATING_TEST)!r}, 'the test was changed'\n"
            f"done = subprocess.run({_PYTEST}, capture_output=True, timeout=25)\n"
            "sys.exit(done.returncode)\n"
        ),
        solution={"seating.py": _SEATING.replace("range(1, seats)", "range(1, seats + 1)")},
    ),
    SuiteTask(
        "fr-add-function",
        "Could you add fahrenheit_to_celsius(f) to kitchen_units.py? Round the result to a whole degree, "
        "like an oven dial.",
        {"kitchen_units.py": _KITCHEN_UNITS},
        check=(
            "import kitchen_units as k\n"
            "assert k.fahrenheit_to_celsius(350) == 177\n"
            "assert k.fahrenheit_to_celsius(425) == 218\n"
            "assert k.fahrenheit_to_celsius(212) == 100\n"
            "assert k.cups_to_ml(2) == 473.2 and k.tbsp_to_ml(1) == 14.8 and k.tsp_to_ml(2) == 9.9\n"
        ),
        solution={
            "kitchen_units.py": _KITCHEN_UNITS
            + "\n\ndef fahrenheit_to_celsius(f: float) -> int:\n    return round((f - 32) * 5 / 9)\n"
        },
    ),
    SuiteTask(
        "fr-rename",
        "rename `haversine_km` to `great_circle_km` everywhere in this project",
        {"geo.py": _GEO, "trail.py": _TRAIL},
        check=(
            "import pathlib\n"
            "for name in ('geo.py', 'trail.py'):\n"
            "    assert 'haversine_km' not in pathlib.Path(name).read_text(), name\n"
            "import geo, trail\n"
            "assert not hasattr(geo, 'haversine_km')\n"
            "pts = [(51.5007, -0.1246), (48.8584, 2.2945), (52.3731, 4.8926)]\n"
            "assert abs(geo.great_circle_km(pts[0], pts[1]) - 340.5) < 1.0\n"
            "assert abs(trail.trail_length_km(pts) - 772.1) < 2.0\n"
            "assert abs(trail.longest_leg_km(pts) - 431.6) < 1.0\n"
        ),
        solution={
            "geo.py": _GEO.replace("haversine_km", "great_circle_km"),
            "trail.py": _TRAIL.replace("haversine_km", "great_circle_km"),
        },
    ),
    SuiteTask(
        "fr-create-file",
        "build.py imports slugify from a slugify.py that doesn't exist yet. write it: slugify(title) lowercases "
        "the title, turns every run of characters that aren't letters or digits into one hyphen, and strips "
        "hyphens off both ends",
        {"build.py": _BUILD, "posts/first-light.md": "# First Light!\nThe dome opened at 21:40.\n"},
        check=(
            "from slugify import slugify\n"
            "assert slugify('Hello, World!') == 'hello-world'\n"
            "assert slugify('  Ten Tips -- for 2024 ') == 'ten-tips-for-2024'\n"
            "assert slugify('already-a-slug') == 'already-a-slug'\n"
            "assert slugify('C++ & Rust?') == 'c-rust'\n"
        ),
        solution={
            "slugify.py": (
                "import re\n\n\ndef slugify(title: str) -> str:\n"
                "    return re.sub(r'[^a-z0-9]+', '-', title.lower()).strip('-')\n"
            )
        },
    ),
    SuiteTask(
        "fr-find-definition",
        "where is normalize_isbn defined? just tell me the file",
        {
            "catalog/__init__.py": _CATALOG_INIT,
            "catalog/codes.py": _CATALOG_CODES,
            "catalog/lookup.py": _CATALOG_LOOKUP,
            "checkout.py": _CHECKOUT,
        },
        answer_has=("codes.py",),
        unchanged=True,
    ),
    SuiteTask(
        "fr-broken-import",
        "`python schedule.py` dies with an ImportError, can you sort it out?",
        {"plantcal.py": _PLANTCAL, "schedule.py": _SCHEDULE},
        check=(
            "import subprocess, sys\n"
            "done = subprocess.run([sys.executable, 'schedule.py'], capture_output=True, text=True, timeout=20)\n"
            "assert done.returncode == 0, done.stderr\n"
            "lines = dict(line.split() for line in done.stdout.splitlines() if line.strip())\n"
            "assert lines == {'fern': '2024-05-05', 'cactus': '2024-05-11', 'basil': '2024-05-07'}, lines\n"
        ),
        solution={
            "schedule.py": _SCHEDULE.replace("import next_watering\n", "import next_watering_day\n").replace(
                "{next_watering(", "{next_watering_day("
            )
        },
    ),
    SuiteTask(
        "fr-summarise",
        "what does backup_rotate.py actually do? short summary please, don't change anything",
        {"backup_rotate.py": _BACKUP_ROTATE},
        answer_has=("backup",),
        unchanged=True,
    ),
)

# ---------------------------------------------------------------------------------------------
# Other kinds
# ---------------------------------------------------------------------------------------------

_WEATHER = r'''"""Readings from the backyard weather station: parsing, derived values, daily summaries.

The station's logger writes one CSV line per reading:

    2024-06-01T14:05:00,23.4,61,1012.8,3.2,180,0.0

timestamp, temperature (C), relative humidity (%), pressure (hPa), wind speed (m/s),
wind direction (degrees), rain since the previous reading (mm).
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from dataclasses import dataclass
from datetime import date, datetime

COMPASS = ("N", "NNE", "NE", "ENE", "E", "ESE", "SE", "SSE", "S", "SSW", "SW", "WSW", "W", "WNW", "NW", "NNW")
MAGNUS_A = 17.62
MAGNUS_B = 243.12
SEA_LEVEL_HPA = 1013.25


@dataclass(frozen=True)
class Reading:
    at: datetime
    temp_c: float
    humidity: float
    pressure_hpa: float
    wind_ms: float
    wind_deg: float
    rain_mm: float


class BadLine(ValueError):
    """A logger line that could not be parsed."""


def parse_line(line: str) -> Reading:
    fields = line.strip().split(",")
    if len(fields) != 7:
        raise BadLine(f"expected 7 fields, got {len(fields)}: {line!r}")
    try:
        at = datetime.fromisoformat(fields[0])
        numbers = [float(f) for f in fields[1:]]
    except ValueError as exc:
        raise BadLine(f"unreadable line {line!r}: {exc}") from exc
    temp_c, humidity, pressure, wind, direction, rain = numbers
    if not 0 <= humidity <= 100:
        raise BadLine(f"humidity out of range: {humidity}")
    return Reading(at, temp_c, humidity, pressure, wind, direction % 360, max(rain, 0.0))


def parse_log(text: str, *, strict: bool = False) -> list[Reading]:
    readings = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        try:
            readings.append(parse_line(line))
        except BadLine:
            if strict:
                raise
    return readings


# -- unit conversions ------------------------------------------------------------------


def c_to_f(temp_c: float) -> float:
    return temp_c * 9 / 5 + 32


def f_to_c(temp_f: float) -> float:
    return (temp_f - 32) * 5 / 9


def ms_to_kmh(speed: float) -> float:
    return speed * 3.6


def compass_point(degrees: float) -> str:
    index = int((degrees % 360) / 22.5 + 0.5) % 16
    return COMPASS[index]


# -- derived values --------------------------------------------------------------------


def dew_point(temp_c: float, humidity: float) -> float:
    """Magnus formula; good to about 0.1 C between -45 and 60 C."""
    gamma = math.log(max(humidity, 1e-6) / 100) + MAGNUS_A * temp_c / (MAGNUS_B + temp_c)
    return round(MAGNUS_B * gamma / (MAGNUS_A - gamma), 1)


def heat_index(temp_c: float, humidity: float) -> float:
    """Apparent temperature in C from the Rothfusz regression used by the NWS."""
    t = c_to_f(temp_c)
    rh = humidity
    hi = (
        -42.379
        + 2.04901523 * t
        + 10.14333127 * rh
        - 0.22475541 * t * rh
        - 0.00683783 * t * t
        - 0.05481717 * rh * rh
        + 0.00122874 * t * t * rh
        + 0.00085282 * t * rh * rh
        - 0.00000199 * t * t * rh * rh
    )
    return round(f_to_c(hi), 1)


def wind_chill(temp_c: float, wind_ms: float) -> float:
    """Felt temperature in C (Environment Canada); defined at or below 10 C with wind over 4.8 km/h."""
    kmh = ms_to_kmh(wind_ms)
    if temp_c > 10 or kmh <= 4.8:
        return temp_c
    v = kmh**0.16
    return round(13.12 + 0.6215 * temp_c - 11.37 * v + 0.3965 * temp_c * v, 1)


def sea_level_pressure(pressure_hpa: float, altitude_m: float, temp_c: float) -> float:
    """Reduce station pressure to sea level (hypsometric formula)."""
    factor = 1 - 0.0065 * altitude_m / (temp_c + 0.0065 * altitude_m + 273.15)
    return round(pressure_hpa * factor**-5.257, 1)


# -- summaries -------------------------------------------------------------------------


@dataclass
class DaySummary:
    day: date
    low: float
    high: float
    mean: float
    rain_mm: float
    max_wind_ms: float
    wind_from: str


def by_day(readings: list[Reading]) -> dict[date, list[Reading]]:
    days: dict[date, list[Reading]] = {}
    for reading in readings:
        days.setdefault(reading.at.date(), []).append(reading)
    return days


def summarise_day(day: date, readings: list[Reading]) -> DaySummary:
    temps = [r.temp_c for r in readings]
    directions = Counter(compass_point(r.wind_deg) for r in readings if r.wind_ms > 0.5)
    return DaySummary(
        day=day,
        low=min(temps),
        high=max(temps),
        mean=round(statistics.fmean(temps), 1),
        rain_mm=round(sum(r.rain_mm for r in readings), 1),
        max_wind_ms=max(r.wind_ms for r in readings),
        wind_from=directions.most_common(1)[0][0] if directions else "calm",
    )


def summarise(readings: list[Reading]) -> list[DaySummary]:
    return [summarise_day(day, rs) for day, rs in sorted(by_day(readings).items())]


def pressure_trend(readings: list[Reading], hours: float = 3.0) -> str:
    """'rising', 'falling' or 'steady' over the last `hours` of readings."""
    if len(readings) < 2:
        return "steady"
    last = readings[-1]
    window = [r for r in readings if (last.at - r.at).total_seconds() <= hours * 3600]
    change = last.pressure_hpa - window[0].pressure_hpa
    if change > 1.0:
        return "rising"
    if change < -1.0:
        return "falling"
    return "steady"


def format_summary(summary: DaySummary) -> str:
    return (
        f"{summary.day.isoformat()}  {summary.low:5.1f} .. {summary.high:5.1f} C"
        f"  (mean {summary.mean:.1f})  rain {summary.rain_mm:.1f} mm"
        f"  wind max {ms_to_kmh(summary.max_wind_ms):.0f} km/h from {summary.wind_from}"
    )


def report(text: str) -> str:
    return "\n".join(format_summary(s) for s in summarise(parse_log(text)))
'''

_WEATHER_HEAD = _WEATHER[: _WEATHER.index("def heat_index(")]
_WEATHER_TAIL = _WEATHER[_WEATHER.index("\ndef wind_chill(") :]

_TIMECODES = r'''"""Parse and format track lengths."""


def parse_duration(text: str) -> int:
    """'m:ss' or 'h:mm:ss' -> seconds."""
    parts = [int(p) for p in text.strip().split(":")]
    if len(parts) == 2:
        minutes, seconds = parts
        return minutes * 60 + seconds
    if len(parts) == 1:
        return parts[0]


def format_duration(seconds: int) -> str:
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02}:{secs:02}" if hours else f"{minutes}:{secs:02}"
'''

_PLAYLIST = r'''"""A playlist is a list of {"title": ..., "length": "m:ss"} tracks."""

import json

from timecodes import format_duration, parse_duration


def load(path: str) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return json.load(f)["tracks"]


def total_seconds(tracks: list[dict]) -> int:
    total = 0
    for track in tracks:
        total += parse_duration(track["length"])
    return total


def describe(tracks: list[dict]) -> str:
    return f"{len(tracks)} tracks, {format_duration(total_seconds(tracks))}"
'''

_PLAYLIST_MAIN = r"""import sys

import playlist

if __name__ == "__main__":
    tracks = playlist.load(sys.argv[1] if len(sys.argv) > 1 else "mix.json")
    print(playlist.describe(tracks))
"""

_MIX_JSON = r"""{
  "name": "saturday warmup",
  "tracks": [
    {"title": "Opening", "length": "3:45"},
    {"title": "Live at the Boiler Room", "length": "1:02:10"},
    {"title": "Closer", "length": "4:05"}
  ]
}
"""

_BILL = r'''"""Split a restaurant bill between friends. All amounts are in cents."""


def add_tip(total_cents: int, percent: float) -> int:
    return round(total_cents * (1 + percent / 100))


def split_bill(total_cents: int, people: int) -> list[int]:
    """Each person's share, largest first; the shares always add up to total_cents."""
    if people < 1:
        raise ValueError("need at least one person")
    base, extra = divmod(total_cents, people)
    return [base + 1 if i < extra else base for i in range(people)]
'''

_BILL_BROKEN = _BILL.replace(
    "    base, extra = divmod(total_cents, people)\n"
    "    return [base + 1 if i < extra else base for i in range(people)]\n",
    "    return [total_cents // people] * people\n",
)

_BILL_TEST = r"""import pytest

from bill import add_tip, split_bill


def test_shares_add_up():
    for total, people in [(1000, 3), (1, 4), (999, 7), (500, 5)]:
        assert sum(split_bill(total, people)) == total


def test_shares_differ_by_at_most_one_cent():
    shares = split_bill(1000, 3)
    assert shares == [334, 333, 333]


def test_needs_someone_to_pay():
    with pytest.raises(ValueError):
        split_bill(100, 0)


def test_tip():
    assert add_tip(2000, 15) == 2300
"""

_WORDFREQ = r'''"""Print the most common words in a text file."""

import argparse
import collections
import re


def count_words(text: str) -> collections.Counter:
    return collections.Counter(re.findall(r"[a-z']+", text.lower()))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("path", help="text file to read")
    args = parser.parse_args(argv)
    with open(args.path, encoding="utf-8") as f:
        counts = count_words(f.read())
    for word, n in counts.most_common(10):
        print(f"{n:>6}  {word}")


if __name__ == "__main__":
    main()
'''

_NOTES_TXT = r"""The lighthouse keeper wrote in the log every night. The lamp was cleaned, the lens was turned,
and the weather was noted. On the worst nights the keeper climbed the stairs the whole night through,
because the lamp had to burn and the ships had to see it. The log says little about the keeper himself.
"""

_EXPORT = r'''"""Build the ffmpeg command that turns a recording into an mp3."""

import shlex

BITRATE_KBPS = 192
SAMPLE_RATE = 44100


def ffmpeg_args(src: str, dst: str) -> list[str]:
    return ["ffmpeg", "-y", "-i", src, "-ar", str(SAMPLE_RATE), "-b:a", f"{BITRATE_KBPS}k", dst]


def command_line(src: str, dst: str) -> str:
    return shlex.join(ffmpeg_args(src, dst))
'''

_AUDIT = r'''"""Append-only audit trail for the front desk (audit.jsonl)."""

import json
import time
from pathlib import Path

TRAIL = Path("audit.jsonl")


def write_audit(actor: str, action: str, **details) -> None:
    entry = {"at": time.time(), "actor": actor, "action": action, **details}
    with TRAIL.open("a", encoding="utf-8") as f:
        f.write(json.dumps(entry) + "\n")
'''

_MEMBERS = r'''"""Gym memberships."""

from datetime import date, timedelta

from audit import write_audit

MEMBERS: dict[int, dict] = {}


def lookup(member_id: int) -> dict:
    return MEMBERS[member_id]


def renew_membership(member_id: int, months: int = 12) -> date:
    member = MEMBERS[member_id]
    member["expires"] = member["expires"] + timedelta(days=30 * months)
    return member["expires"]


def cancel_membership(member_id: int, staff: str, reason: str) -> None:
    member = MEMBERS.pop(member_id)
    write_audit(staff, "cancel", member=member_id, name=member["name"], reason=reason)
'''

_LOCKERS = r'''"""Locker assignments."""

from audit import write_audit

LOCKERS: dict[int, int | None] = {n: None for n in range(1, 41)}


def free_lockers() -> list[int]:
    return [n for n, owner in LOCKERS.items() if owner is None]


def reassign_locker(locker: int, new_owner: int, staff: str) -> None:
    old = LOCKERS[locker]
    LOCKERS[locker] = new_owner
    write_audit(staff, "locker", locker=locker, old=old, new=new_owner)
'''

_PASSES = r'''"""Day passes for guests."""

import secrets
from datetime import date

import audit

VALID: dict[str, date] = {}


def issue_guest_pass(host_id: int, guest: str, staff: str) -> str:
    code = secrets.token_hex(4)
    VALID[code] = date.today()
    audit.write_audit(staff, "guest-pass", host=host_id, guest=guest, code=code)
    return code


def pass_is_valid(code: str) -> bool:
    return VALID.get(code) == date.today()
'''

_EMAILS = r'''"""Emails to members."""

import logging

log = logging.getLogger("desk.emails")


def send_welcome(address: str, name: str) -> None:
    log.info("welcome mail to %s <%s>", name, address)


def send_expiry_notice(address: str, days_left: int) -> None:
    log.info("expiry notice to %s (%d days left)", address, days_left)
'''

_COURTS = r'''"""Tennis court bookings."""

OPEN_HOUR = 7
CLOSE_HOUR = 22


class BookingError(ValueError):
    pass


def book_court(court_id: int, start_hour: int, hours: int) -> dict:
    end_hour = start_hour + hours
    if hours <= 0:
        raise BookingError("a booking needs at least one hour")
    if start_hour < OPEN_HOUR or end_hour > CLOSE_HOUR:
        raise BookingError(f"court {court_id}: outside opening hours")
    return {"court": court_id, "start": start_hour, "end": end_hour}
'''

_COURTS_NEW = r'''"""Tennis court bookings."""

OPEN_HOUR = 7
CLOSE_HOUR = 22


class BookingError(ValueError):
    pass


def book_court(court_id: int, start_hour: int, end_hour: int) -> dict:
    if end_hour <= start_hour:
        raise BookingError("a booking needs at least one hour")
    if start_hour < OPEN_HOUR or end_hour > CLOSE_HOUR:
        raise BookingError(f"court {court_id}: outside opening hours")
    return {"court": court_id, "start": start_hour, "end": end_hour}
'''

_LEAGUE = r'''"""Club league nights."""

from courts import book_court


def evening_matches(courts: list[int]) -> list[dict]:
    return [book_court(court, 18, 2) for court in courts]
'''

_LESSONS = r'''"""Coaching lessons."""

import courts


def lesson_block(court_id: int, first_hour: int, lessons: int) -> list[dict]:
    """Back-to-back one-hour lessons on one court."""
    return [courts.book_court(court_id, first_hour + i, 1) for i in range(lessons)]


def morning_drill(court_id: int) -> dict:
    return courts.book_court(court_id, 8, 1)
'''

_POLL = r'''"""Tally results for the club's online polls."""

from collections import Counter


def tally(ballots: list[str]) -> Counter:
    return Counter(ballots)


def percentages(counts: dict[str, int]) -> dict[str, float]:
    """Share of the vote per option, in percent, rounded to 1 decimal."""
    if not counts:
        return {}
    return {option: round(100 * n / len(counts), 1) for option, n in counts.items()}


def winner(counts: dict[str, int]) -> str | None:
    return max(counts, key=counts.get) if counts else None
'''

_POLL_CHANGELOG = r"""# Changelog

## Unreleased

## 0.3.0 - 2024-03-02

- Added `winner()`.
- Ballots are read case-insensitively.

## 0.2.0 - 2024-01-15

- First release used by the club.
"""

OTHER: tuple[SuiteTask, ...] = (
    SuiteTask(
        "fr-deep-edit",
        "heat_index in weather_station.py gives nonsense on cool days. The formula is only meant for 27 C and up; "
        "below that it should just return the temperature it was given. Don't touch anything else in that file.",
        {"weather_station.py": _WEATHER},
        check=(
            "import hashlib, pathlib\n"
            "text = pathlib.Path('weather_station.py').read_text(encoding='utf-8')\n"
            "head = text[: text.index('def heat_index(')]\n"
            "tail = text[text.index('\\ndef wind_chill(') :]\n"
            f"assert hashlib.sha256(head.encode()).hexdigest() == {_sha(_WEATHER_HEAD)!r}, 'text before changed'\n"
            f"assert hashlib.sha256(tail.encode()).hexdigest() == {_sha(_WEATHER_TAIL)!r}, 'text after changed'\n"
            "import weather_station as ws\n"
            "assert ws.heat_index(20, 50) == 20\n"
            "assert ws.heat_index(12.5, 95) == 12.5\n"
            "assert abs(ws.heat_index(32, 70) - 40.4) < 0.15\n"
            "assert abs(ws.heat_index(30, 85) - 39.1) < 0.15\n"
        ),
        solution={
            "weather_station.py": _WEATHER.replace(
                '    """Apparent temperature in C from the Rothfusz regression used by the NWS."""\n',
                '    """Apparent temperature in C from the Rothfusz regression used by the NWS."""\n'
                "    if temp_c < 27:\n        return temp_c\n",
            )
        },
    ),
    SuiteTask(
        "fr-crash-elsewhere",
        "running `python main.py` crashes with a TypeError in playlist.py. fix it please",
        {"timecodes.py": _TIMECODES, "playlist.py": _PLAYLIST, "main.py": _PLAYLIST_MAIN, "mix.json": _MIX_JSON},
        check=(
            "import subprocess, sys\n"
            "done = subprocess.run([sys.executable, 'main.py'], capture_output=True, text=True, timeout=20)\n"
            "assert done.returncode == 0, done.stderr\n"
            "assert '3 tracks, 1:10:00' in done.stdout, done.stdout\n"
            "import playlist\n"
            "assert playlist.total_seconds([{'length': '1:00:01'}, {'length': '0:59'}]) == 3660\n"
        ),
        solution={
            "timecodes.py": _TIMECODES.replace(
                "    if len(parts) == 1:\n",
                "    if len(parts) == 3:\n        hours, minutes, seconds = parts\n"
                "        return hours * 3600 + minutes * 60 + seconds\n    if len(parts) == 1:\n",
            )
        },
    ),
    SuiteTask(
        "fr-write-test",
        "can you write a pytest file test_bill.py for bill.py? mainly i want to be sure split_bill never loses "
        "or invents a cent",
        {"bill.py": _BILL},
        check=(
            "import pathlib, shutil, subprocess, sys, tempfile\n"
            f"BROKEN = {_BILL_BROKEN!r}\n"
            "def run(folder):\n"
            f"    cmd = {_PYTEST} + ['test_bill.py']\n"
            "    return subprocess.run(cmd, cwd=folder, capture_output=True, timeout=12).returncode\n"
            "assert pathlib.Path('test_bill.py').is_file()\n"
            "skip = shutil.ignore_patterns('__pycache__', '.pytest_cache')\n"
            "with tempfile.TemporaryDirectory() as tmp:\n"
            "    good, bad = pathlib.Path(tmp, 'good'), pathlib.Path(tmp, 'bad')\n"
            "    shutil.copytree('.', good, ignore=skip)\n"
            "    shutil.copytree('.', bad, ignore=skip)\n"
            "    (bad / 'bill.py').write_text(BROKEN, encoding='utf-8')\n"
            "    assert run(good) == 0, 'the tests fail on the correct bill.py'\n"
            "    assert run(bad) != 0, 'the tests pass on a split_bill that loses cents'\n"
        ),
        solution={"test_bill.py": _BILL_TEST},
    ),
    SuiteTask(
        "fr-cli-flag",
        "wordfreq.py always prints the top 10 words. add a --top option so I can pick how many (still 10 when "
        "it's not given)",
        {"wordfreq.py": _WORDFREQ, "notes.txt": _NOTES_TXT},
        check=(
            "import subprocess, sys\n"
            "def run(*extra):\n"
            "    done = subprocess.run([sys.executable, 'wordfreq.py', 'notes.txt', *extra],\n"
            "                          capture_output=True, text=True, timeout=20)\n"
            "    assert done.returncode == 0, done.stderr\n"
            "    return [line for line in done.stdout.splitlines() if line.strip()]\n"
            "three = run('--top', '3')\n"
            "assert len(three) == 3 and 'the' in three[0].split(), three\n"
            "assert len(run('--top', '1')) == 1\n"
            "assert len(run()) == 10\n"
        ),
        solution={
            "wordfreq.py": _WORDFREQ.replace(
                '    parser.add_argument("path", help="text file to read")\n',
                '    parser.add_argument("path", help="text file to read")\n'
                '    parser.add_argument("--top", type=int, default=10, help="how many words to print")\n',
            ).replace("most_common(10)", "most_common(args.top)")
        },
    ),
    SuiteTask(
        "fr-config-move",
        "The mp3 bitrate is hard-coded in export.py. Move it into a config file, export.json, and make export.py "
        "read it from there.",
        {"export.py": _EXPORT},
        check=(
            "import ast, json, pathlib, shutil, subprocess, sys, tempfile\n"
            "config = json.loads(pathlib.Path('export.json').read_text(encoding='utf-8'))\n"
            "def swap(node):\n"
            "    if isinstance(node, dict):\n"
            "        return {k: swap(v) for k, v in node.items()}\n"
            "    if isinstance(node, list):\n"
            "        return [swap(v) for v in node]\n"
            "    if isinstance(node, (int, float)) and not isinstance(node, bool) and node == 192:\n"
            "        return 96\n"
            "    if isinstance(node, str) and '192' in node:\n"
            "        return node.replace('192', '96')\n"
            "    return node\n"
            "changed = swap(config)\n"
            "assert changed != config, 'no 192 in export.json'\n"
            "with tempfile.TemporaryDirectory() as tmp:\n"
            "    shutil.copytree('.', tmp, dirs_exist_ok=True, ignore=shutil.ignore_patterns('__pycache__'))\n"
            "    pathlib.Path(tmp, 'export.json').write_text(json.dumps(changed), encoding='utf-8')\n"
            "    code = \"import export; print(repr(export.ffmpeg_args('in.wav', 'out.mp3')))\"\n"
            "    done = subprocess.run([sys.executable, '-c', code], cwd=tmp,\n"
            "                          capture_output=True, text=True, timeout=20)\n"
            "    assert done.returncode == 0, done.stderr\n"
            "    args = ast.literal_eval(done.stdout.strip().splitlines()[-1])\n"
            "    assert args[args.index('-b:a') + 1] == '96k', args\n"
            "    assert args[:3] == ['ffmpeg', '-y', '-i'] and args[-1] == 'out.mp3', args\n"
        ),
        solution={
            "export.json": '{"bitrate_kbps": 192}\n',
            "export.py": _EXPORT.replace(
                "import shlex\n", "import json\nimport shlex\nfrom pathlib import Path\n"
            ).replace(
                "BITRATE_KBPS = 192\n",
                'CONFIG = json.loads((Path(__file__).parent / "export.json").read_text(encoding="utf-8"))\n'
                'BITRATE_KBPS = CONFIG["bitrate_kbps"]\n',
            ),
        },
    ),
    SuiteTask(
        "fr-search-question",
        "which functions write to the audit trail? I need the function names and the file each one is in",
        {
            "audit.py": _AUDIT,
            "members.py": _MEMBERS,
            "lockers.py": _LOCKERS,
            "passes.py": _PASSES,
            "emails.py": _EMAILS,
        },
        answer_has=("cancel_membership", "reassign_locker", "issue_guest_pass"),
        unchanged=True,
    ),
    SuiteTask(
        "fr-signature-change",
        "change book_court in courts.py to take an end hour instead of a number of hours, so "
        "book_court(court_id, start_hour, end_hour). update all the places that call it",
        {"courts.py": _COURTS, "league.py": _LEAGUE, "lessons.py": _LESSONS},
        check=(
            "import inspect\n"
            "import courts, league, lessons\n"
            "assert list(inspect.signature(courts.book_court).parameters) == ['court_id', 'start_hour', 'end_hour']\n"
            "assert courts.book_court(1, 9, 11) == {'court': 1, 'start': 9, 'end': 11}\n"
            "assert league.evening_matches([1, 2]) == [{'court': 1, 'start': 18, 'end': 20},\n"
            "                                          {'court': 2, 'start': 18, 'end': 20}]\n"
            "assert lessons.lesson_block(3, 10, 2) == [{'court': 3, 'start': 10, 'end': 11},\n"
            "                                          {'court': 3, 'start': 11, 'end': 12}]\n"
            "assert lessons.morning_drill(4) == {'court': 4, 'start': 8, 'end': 9}\n"
        ),
        solution={
            "courts.py": _COURTS_NEW,
            "league.py": _LEAGUE.replace("book_court(court, 18, 2)", "book_court(court, 18, 20)"),
            "lessons.py": _LESSONS.replace("first_hour + i, 1)", "first_hour + i, first_hour + i + 1)").replace(
                "book_court(court_id, 8, 1)", "book_court(court_id, 8, 9)"
            ),
        },
    ),
    SuiteTask(
        "fr-fix-changelog",
        "percentages() in poll.py is broken, the numbers don't add up to 100. fix it, then add a line under "
        "Unreleased in CHANGELOG.md saying what was fixed",
        {"poll.py": _POLL, "CHANGELOG.md": _POLL_CHANGELOG},
        check=(
            "import pathlib, poll\n"
            "assert poll.percentages({'yes': 1, 'no': 3}) == {'yes': 25.0, 'no': 75.0}\n"
            "assert poll.percentages({'a': 2, 'b': 2, 'c': 4}) == {'a': 25.0, 'b': 25.0, 'c': 50.0}\n"
            "assert poll.percentages({'x': 1, 'y': 2}) == {'x': 33.3, 'y': 66.7}\n"
            f"old = set({_POLL_CHANGELOG.splitlines()!r})\n"
            "lines = pathlib.Path('CHANGELOG.md').read_text(encoding='utf-8').splitlines()\n"
            "start = next(i for i, line in enumerate(lines) if 'unreleased' in line.lower())\n"
            "end = next(i for i, line in enumerate(lines) if line.startswith('## 0.3.0'))\n"
            "new = [line.lower() for line in lines[start + 1 : end] if line.strip() and line not in old]\n"
            "assert any('percent' in line or 'poll' in line for line in new), new\n"
        ),
        solution={
            "poll.py": _POLL.replace("/ len(counts), 1)", "/ sum(counts.values()), 1)"),
            "CHANGELOG.md": _POLL_CHANGELOG.replace(
                "## Unreleased\n", "## Unreleased\n\n- Fixed `percentages()`: shares now add up to 100.\n"
            ),
        },
    ),
)

FRESH: tuple[SuiteTask, ...] = FIRST_KINDS + OTHER
