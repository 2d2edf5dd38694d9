"""Imports each preinstalled Python distribution and records its version.

Run at image build time as: python3 preinstalled.py MANIFEST DIST=MODULE...
Each DIST=MODULE pair names a distribution and a module it provides; the
module is imported (so the build fails when a package does not work), and
MANIFEST gets one "DIST VERSION" line per distribution, merged with the lines
already in it (an image built on another adds its own), sorted by name.
"""
import importlib
import importlib.metadata
import os
import sys


def main(manifest, pairs):
    entries = {}
    if os.path.exists(manifest):
        with open(manifest) as f:
            for line in f:
                name, _, version = line.strip().partition(" ")
                if name:
                    entries[name] = version
    for pair in pairs:
        dist, _, module = pair.partition("=")
        importlib.import_module(module or dist)
        entries[dist] = importlib.metadata.version(dist)
    os.makedirs(os.path.dirname(manifest), exist_ok=True)
    with open(manifest, "w") as f:
        for name in sorted(entries, key=str.lower):
            f.write("%s %s\n" % (name, entries[name]))


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit("usage: preinstalled.py MANIFEST DIST=MODULE...")
    main(sys.argv[1], sys.argv[2:])
