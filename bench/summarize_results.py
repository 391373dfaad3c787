#!/usr/bin/env python3
"""Turns a bench/run_all.sh results directory into Markdown tables.

Usage: summarize_results.py RESULTS_DIR > summary.md

Reads backend_bench.json (Google Benchmark) and grpc_<backend>.json
(kv-indexer-bench) and prints the tables BENCHMARKS.md uses, with the target
ratios computed from the same files. Standard library only.
"""
import glob
import json
import os
import statistics
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def fmt_rate(x):
    if x >= 1e6:
        return f"{x / 1e6:.2f} M"
    if x >= 1e3:
        return f"{x / 1e3:.1f} k"
    return f"{x:.0f}"


def verdict(ok):
    return "met" if ok else "NOT met"


def in_process(results, out):
    path = os.path.join(results, "backend_bench.json")
    if not os.path.exists(path):
        return {}
    data = load(path)
    bench = {b["name"]: b for b in data["benchmarks"] if "error_message" not in b}
    backends = []
    for name in bench:
        parts = name.split("/")
        if parts[0] == "memory" and parts[1] not in backends:
            backends.append(parts[1])
    floor = next((b for n, b in bench.items() if n.startswith("lookup_floor/")), None)

    def case(prefix, backend):
        for n, b in bench.items():
            if n.startswith(f"{prefix}/{backend}/"):
                return b
        return None

    ctx = data.get("context", {})
    out.append(f"Run: {ctx.get('date_utc', '?')}, load average at start "
               f"{ctx.get('loadavg_start', '?')}, {ctx.get('num_cpus', '?')} CPUs "
               f"({ctx.get('cpu_model', '?')}).\n")
    header = "| Case | " + " | ".join(backends) + " | lookup floor |"
    out.append(header)
    out.append("|" + "---|" * (len(backends) + 2))

    def ns(b):
        return b["sec_per_block"] * 1e9 if b else float("nan")

    floor_ns = ns(floor) if floor else float("nan")
    rows = [
        ("prefix scan, raw PrefixScan + trivial visitor (ns/block)", "prefix_raw_scan"),
        ("prefix query, Indexer::MatchPrefix (ns/block)", "prefix_indexer"),
        ("worst case, every block a different placement list: raw PrefixScan (ns/block)",
         "prefix_raw_scan_distinct_lists"),
        ("worst case, every block a different placement list: Indexer::MatchPrefix (ns/block)",
         "prefix_indexer_distinct_lists"),
        ("MatchExternalKv, raw Match (ns/block)", "match_raw"),
        ("MatchExternalKv, Indexer::Match (ns/block)", "match_indexer"),
    ]
    summary = {}
    for label, prefix in rows:
        cells = []
        for be in backends:
            b = case(prefix, be)
            v = ns(b)
            cells.append(f"{v:.1f} ({v / floor_ns:.2f}x floor)")
            summary[(prefix, be)] = v
        fl = f"{floor_ns:.1f}" if prefix == "prefix_raw_scan" else ""
        out.append(f"| {label} | " + " | ".join(cells) + f" | {fl} |")
    for label, prefix in [
        ("apply via Indexer, 16,384-hash batches (placements/s)", "apply_indexer/{}/batch16384"),
        ("apply via Indexer, 64-hash batches (placements/s)", "apply_indexer/{}/batch64"),
        ("apply raw backend, 16,384-hash batches (placements/s)", "apply_raw/{}/batch16384"),
        ("apply raw backend, 64-hash batches (placements/s)", "apply_raw/{}/batch64"),
    ]:
        cells = []
        for be in backends:
            b = bench.get(prefix.format(be))
            v = b["placements_per_s"] if b else float("nan")
            summary[(prefix, be)] = v
            cells.append(fmt_rate(v))
        out.append(f"| {label} | " + " | ".join(cells) + " | |")
    mem_names = sorted({"/".join(n.split("/")[2:4]) for n in bench if n.startswith("memory/")},
                       key=lambda s: (int(s.split("pl")[0]), s))
    for m in mem_names:
        cells_mem, cells_fill = [], []
        ppb = None
        for be in backends:
            b = bench.get(f"memory/{be}/{m}/iterations:1")
            if not b:
                cells_mem.append("n/a")
                cells_fill.append("n/a")
                continue
            ppb = b["placements_per_block"]
            cells_mem.append(f"{b['stats_bytes_per_placement']:.1f} / {b['rss_bytes_per_placement']:.1f}")
            cells_fill.append(f"{fmt_rate(b['fill_placements_per_cpu_s'])} / {fmt_rate(b['fill_placements_per_s'])}")
            summary[("mem", be, m)] = b
        pl = m.split("pl")[0]
        out.append(f"| memory, {int(pl):,} placements, {ppb:.2f} placements/block: "
                   "B/placement (GetStats / RSS delta) | " + " | ".join(cells_mem) + " | |")
        out.append(f"| fill rate at {int(pl):,} placements, {ppb:.2f} placements/block: "
                   "placements/s (per CPU s / per wall s) | " + " | ".join(cells_fill) + " | |")
    summary["floor_ns"] = floor_ns
    summary["backends"] = backends
    summary["mem_names"] = mem_names
    return summary


def grpc(results, out):
    files = sorted(glob.glob(os.path.join(results, "grpc_*.json")))
    runs = {}
    for f in files:
        be = os.path.basename(f)[len("grpc_"):-len(".json")]
        runs[be] = load(f)
    if not runs:
        return {}
    backends = list(runs)
    first = runs[backends[0]]
    out.append(f"Run: {first['date_utc']}, load average at start "
               f"{first['machine']['loadavg_start']}, end {first.get('loadavg_end', '?')}; "
               f"{first['config']['workers']} workers, "
               f"{first['config']['preload_placements']:,} placements preloaded, "
               f"{first['config']['channels']} channels.\n")
    out.append("| Measure | " + " | ".join(backends) + " |")
    out.append("|" + "---|" * (len(backends) + 1))

    def rows_of(d, section, run, target="server"):
        return [r for r in d.get(section, []) if r["run"] == run and r["target"] == target]

    def med(vals):
        return statistics.median(vals) if vals else float("nan")

    def line(label, fn):
        out.append(f"| {label} | " + " | ".join(fn(runs[be]) for be in backends) + " |")

    line("preload (incl. client-side generation), hashes/s",
         lambda d: fmt_rate(d["results"][0]["hashes_per_s"]) if d["results"] else "n/a")
    for run, label in [("ingest/per-request", "ingest, one batch per request"),
                       ("ingest/16384", "ingest, 16,384-hash batches")]:
        line(f"{label}: server hashes/s (floor hashes/s; mean batch)",
             lambda d, run=run: "; ".join(
                 f"{fmt_rate(r['hashes_per_s'])}" for r in rows_of(d, "ingest", run))
             + " (" + "; ".join(fmt_rate(r["hashes_per_s"]) for r in rows_of(d, "ingest", run, "floor"))
             + f"; {med([r['mean_batch_hashes'] for r in rows_of(d, 'ingest', run)]):.0f})")
    for run, label in [("query/headline/saturation", "headline query (128 blocks, 32 candidates) at saturation"),
                       ("query/fleet/saturation", "fleet queries (32..2,048 blocks) at saturation")]:
        line(f"{label}: server qps / floor qps (median of rounds) = ratio",
             lambda d, run=run: (
                 f"{med([r['achieved_qps'] for r in rows_of(d, 'query', run)]):.0f} / "
                 f"{med([r['achieved_qps'] for r in rows_of(d, 'query', run, 'floor')]):.0f} = "
                 f"{med([r['achieved_qps'] for r in rows_of(d, 'query', run)]) / max(med([r['achieved_qps'] for r in rows_of(d, 'query', run, 'floor')]), 1e-9):.2f}"))
        if run == "query/headline/saturation":
            line(f"{label}: CPU us per answer of the answering process, server / floor (median of rounds) = per-CPU-second ratio",
                 lambda d: (
                     f"{d['ratios'].get('headline_cpu_us_per_answer_server_median', 0):.1f} / "
                     f"{d['ratios'].get('headline_cpu_us_per_answer_floor_median', 0):.1f} = "
                     f"{d['ratios'].get('headline_per_cpu_second_server_over_floor', 0):.2f}"))
        line(f"{label}: server p50 / p99 / p99.9 us (median of rounds)",
             lambda d, run=run: " / ".join(
                 f"{med([r['latency_us'][k] for r in rows_of(d, 'query', run)]):.0f}"
                 for k in ("p50", "p99", "p999")))
    line("fleet queries at fixed load: offered qps; server p50 / p99 / p99.9 us",
         lambda d: f"{d['ratios']['query_fixed_qps']:.0f}; " + " / ".join(
             f"{med([r['latency_us'][k] for r in rows_of(d, 'query', 'query/fleet/fixed')]):.0f}"
             for k in ("p50", "p99", "p999")))
    line("mean fleet query length (blocks); mean matches per answer",
         lambda d: "; ".join(
             f"{med([r[k] for r in rows_of(d, 'query', 'query/fleet/fixed')]):.0f}"
             if k == "mean_query_blocks" else
             f"{med([r[k] for r in rows_of(d, 'query', 'query/fleet/fixed')]):.1f}"
             for k in ("mean_query_blocks", "mean_matches")))
    for run, label in [("mixed/idle", "mixed: idle"),
                       ("mixed/paced-ingest", "mixed: with paced ingest"),
                       ("mixed/back-to-back-16384", "mixed: with back-to-back 16,384-hash applies"),
                       ("mixed/back-to-back-16384-to-floor",
                        "mixed control: the same applies at the same rate, sent to the floor")]:
        line(f"{label}: query p99 us per round (median)",
             lambda d, run=run: ", ".join(
                 f"{r['latency_us']['p99']:.0f}" for r in rows_of(d, "mixed", run))
             + f" ({med([r['latency_us']['p99'] for r in rows_of(d, 'mixed', run)]):.0f})")
        if run != "mixed/idle":
            line(f"{label}: apply hashes/s per round",
                 lambda d, run=run: ", ".join(
                     fmt_rate(r["hashes_per_s"]) for r in rows_of(d, "mixed", run + "/ingest")))
    line("failed RPCs by status code, whole run (8 = RESOURCE_EXHAUSTED)",
         lambda d: failed_summary(d))
    return runs


def failed_summary(d):
    codes = {}
    for section in ("results", "ingest", "query", "mixed"):
        for r in d.get(section, []):
            for c, n in r.get("status", {}).items():
                if c != "0":
                    codes[c] = codes.get(c, 0) + n
    return ", ".join(f"{c}: {n}" for c, n in sorted(codes.items())) or "none"


def targets(inproc, runs, out):
    out.append("| Target | " + " | ".join(inproc.get("backends", list(runs))) + " |")
    be_list = inproc.get("backends", list(runs))
    out.append("|" + "---|" * (len(be_list) + 1))
    floor = inproc.get("floor_ns", float("nan"))

    def row(label, fn):
        out.append(f"| {label} | " + " | ".join(fn(be) for be in be_list) + " |")

    row("in-process prefix scan (raw PrefixScan) <= 2x lookup floor",
        lambda be: f"{inproc[('prefix_raw_scan', be)] / floor:.2f}x: "
                   f"{verdict(inproc[('prefix_raw_scan', be)] / floor <= 2)}")
    row("same, through Indexer::MatchPrefix (rule engine included)",
        lambda be: f"{inproc[('prefix_indexer', be)] / floor:.2f}x: "
                   f"{verdict(inproc[('prefix_indexer', be)] / floor <= 2)}")
    row("same, worst case: every block a different placement list (Indexer::MatchPrefix)",
        lambda be: f"{inproc[('prefix_indexer_distinct_lists', be)] / floor:.2f}x: "
                   f"{verdict(inproc[('prefix_indexer_distinct_lists', be)] / floor <= 2)}")
    row("over gRPC, headline throughput >= 70% of transport floor",
        lambda be: (f"{runs[be]['ratios']['headline_qps_server_over_floor']:.2f}: "
                    f"{verdict(runs[be]['ratios']['headline_qps_server_over_floor'] >= 0.7)}")
        if be in runs else "n/a")
    def per_cpu(be):
        value = runs[be]["ratios"].get("headline_per_cpu_second_server_over_floor", 0) if be in runs else 0
        # 0: a side had no CPU figure (a target that was not spawned).
        return f"{value:.2f}: {verdict(value >= 0.7)}" if value > 0 else "n/a"
    row("same, per CPU-second of the answering process (load generator excluded)", per_cpu)
    row("ingest in-process >= 3M placements/s (Indexer, 16,384-hash batches)",
        lambda be: f"{fmt_rate(inproc[('apply_indexer/{}/batch16384', be)])}: "
                   f"{verdict(inproc[('apply_indexer/{}/batch16384', be)] >= 3e6)}")
    row("ingest over gRPC >= 1.5M hashes/s with 16,384-hash batches",
        lambda be: (f"{fmt_rate(runs[be]['ratios']['ingest_16384_hashes_per_s'])}: "
                    f"{verdict(runs[be]['ratios']['ingest_16384_hashes_per_s'] >= 1.5e6)}")
        if be in runs else "n/a")
    def mixed(be):
        if be not in runs:
            return "n/a"
        r = runs[be]["ratios"]
        idle = [x["latency_us"]["p99"] for x in runs[be].get("mixed", [])
                if x["run"] == "mixed/idle" and x["target"] == "server"]
        text = (f"{r['mixed_b2b_p99_over_idle']:.2f}x "
                f"(control {r.get('mixed_b2b_to_floor_p99_over_idle', 0):.2f}x): ")
        # Idle p99 that moves more than 2x between rounds means background
        # load, not the server, decided the tail: no verdict.
        if idle and min(idle) > 0 and max(idle) / min(idle) > 2:
            return text + (f"inconclusive (idle p99 varied {max(idle) / min(idle):.1f}x "
                           "between rounds)")
        return text + verdict(r["mixed_b2b_p99_over_idle"] <= 1.5)

    row("mixed: p99 with back-to-back max applies <= 1.5x idle p99", mixed)
    big = [m for m in inproc.get("mem_names", []) if m.startswith("10000000pl")]
    # The issue: "at most 48 bytes per placement ... for robin_sharded_snapshot,
    # absl_rwlock within 2x of that": robin <= 48 and absl <= 96. absl's ratio
    # to robin's own figure is shown too, since "that" can also be read so.
    def memory(be, m):
        key = ("mem", be, m)
        if key not in inproc:
            return "n/a"
        value = inproc[key]["stats_bytes_per_placement"]
        if be == "absl_rwlock":
            robin = inproc.get(("mem", "robin_sharded_snapshot", m))
            text = f"{value:.1f}: {verdict(value <= 96)}"
            if robin:
                text += (f" ({value / robin['stats_bytes_per_placement']:.2f}x "
                         "robin's figure)")
            return text
        return f"{value:.1f}: {verdict(value <= 48)}"

    for m in big:
        row(f"memory at 10M placements ({m.split('/')[1]}), GetStats B/placement "
            "(robin <= 48, absl <= 2 x 48)",
            lambda be, m=m: memory(be, m))


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    results = sys.argv[1]
    out = ["## In-process (kvindexer_backend_bench)", ""]
    inproc = in_process(results, out)
    out += ["", "## Over gRPC (kv-indexer-bench)", ""]
    runs = grpc(results, out)
    out += ["", "## Targets", ""]
    if inproc and runs:
        targets(inproc, runs, out)
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
