#!/usr/bin/env python3
"""Ratios of two builds' kv-indexer-bench runs, round by round.

Usage: ab_compare.py --a A1.json [A2.json ...] --b B1.json [B2.json ...]

The i-th file of --a and the i-th of --b are one round: two runs made back
to back on one machine (bench/ab.sh alternates which goes first). For every
headline figure of the runs' "ratios" object, prints B/A per round and the
median of those ratios, with the direction in which the figure is better,
so that a change shows against the machine's drift between rounds.
Exits 2 on bad arguments or unreadable files.
"""
import json
import statistics
import sys

# Lower is better for latencies and CPU per answer; higher for the rest.
LOWER_IS_BETTER = ("_p99_", "cpu_us_per_answer", "p99_over_idle")


def better_direction(name):
    return "lower" if any(part in name for part in LOWER_IS_BETTER) else "higher"


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f).get("ratios", {})
    except (OSError, ValueError) as e:
        sys.exit(f"ab_compare: cannot read {path}: {e}")


def parse_args(argv):
    sides = {"--a": [], "--b": []}
    current = None
    for arg in argv:
        if arg in sides:
            current = sides[arg]
        elif current is None:
            sys.exit(__doc__)
        else:
            current.append(arg)
    a, b = sides["--a"], sides["--b"]
    if not a or len(a) != len(b):
        print("ab_compare: need the same number (at least one) of --a and --b "
              "files", file=sys.stderr)
        sys.exit(2)
    return a, b


def main(argv):
    a_files, b_files = parse_args(argv)
    rounds = [(load(a), load(b)) for a, b in zip(a_files, b_files)]
    names = sorted(set().union(*(a.keys() & b.keys() for a, b in rounds)))
    print(f"{'figure':<44} {'better':<7} {'median B/A':>10}  per round B/A")
    for name in names:
        ratios = []
        for a, b in rounds:
            va, vb = a.get(name), b.get(name)
            if isinstance(va, (int, float)) and isinstance(vb, (int, float)) \
                    and va > 0:
                ratios.append(vb / va)
        if not ratios:
            continue
        per_round = " ".join(f"{r:.3f}" for r in ratios)
        print(f"{name:<44} {better_direction(name):<7} "
              f"{statistics.median(ratios):>10.3f}  {per_round}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
