"""CPU package energy from Linux powercap (Intel RAPL, and AMD's through the same driver), where readable.

    rapl = PackageEnergy.open()                 # None: no powercap, no package zone, or not readable
    rapl.sample()                               # call at least once per counter wrap (the meter does, every N ms)
    joules = rapl.joules()                      # energy of every package since open(), wraps included

Each package is a zone `/sys/class/powercap/intel-rapl:<N>` whose `energy_uj` counts microjoules and
wraps to 0 after `max_energy_range_uj` (about 262 kJ on current parts: some 20 minutes at 200 W, seconds
on none). Subzones (`intel-rapl:<N>:<M>`: cores, uncore, DRAM) are parts of their package or beside it
and are not added, so nothing is counted twice; DRAM is left out with them (docs/fairness.md, The cost of
a result). A wrap shows as a reading below the previous one; the delta is then what remained to the top
plus the new reading, which holds as long as readings are less than one wrap apart.

`energy_uj` is often root-only (since Linux 5.10, after the PLATYPUS side channel) and absent in most VMs
and containers: then there is no meter, and the run records "not measured", never an estimate.
The root is a parameter, and $LEVELFIELD_POWERCAP_DIR overrides the default, so tests can point the reader
at a fake tree.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

POWERCAP_DIR = Path("/sys/class/powercap")
POWERCAP_DIR_ENV = "LEVELFIELD_POWERCAP_DIR"
_PACKAGE_ZONE = re.compile(r"intel-rapl:\d+")  # a package; intel-rapl:0:1 (a subzone) does not match
_UJ_PER_J = 1e6


def powercap_dir(environ: dict[str, str] | os._Environ = os.environ) -> Path:
    return Path(environ.get(POWERCAP_DIR_ENV) or POWERCAP_DIR)


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text(encoding="ascii").strip())
    except (OSError, ValueError):
        return None


@dataclass
class _Zone:
    path: Path
    range_uj: int
    last_uj: int
    total_uj: int = 0

    def sample(self) -> None:
        now = _read_int(self.path / "energy_uj")
        if now is None:
            return  # a failed read: the next one covers this stretch
        delta = now - self.last_uj
        if delta < 0:  # wrapped past max_energy_range_uj
            delta += self.range_uj
        self.total_uj += delta
        self.last_uj = now


@dataclass
class PackageEnergy:
    """The package zones of one powercap tree, accumulated from their first reading."""

    zones: list[_Zone] = field(default_factory=list)

    @classmethod
    def open(cls, root: Path | None = None) -> PackageEnergy | None:
        """The readable package zones below `root` (default: powercap_dir()), each read once now; None when
        there is none."""
        root = powercap_dir() if root is None else root
        try:
            names = sorted(p.name for p in root.iterdir() if _PACKAGE_ZONE.fullmatch(p.name))
        except OSError:
            return None
        zones = []
        for name in names:
            energy, top = _read_int(root / name / "energy_uj"), _read_int(root / name / "max_energy_range_uj")
            if energy is not None and top is not None and top > 0:
                zones.append(_Zone(root / name, top, energy))
        return cls(zones) if zones else None

    def sample(self) -> None:
        for zone in self.zones:
            zone.sample()

    def joules(self) -> float:
        """Energy of every package since open(), after a last reading."""
        self.sample()
        return sum(zone.total_uj for zone in self.zones) / _UJ_PER_J
