#!/usr/bin/env python3
"""Export throughput: cwm export against pyarrow on the same rows.

    PY scripts/export-bench.py --cwm CWM [--dir DIR] [--records N] [--rounds R]

PY is a Python with pyarrow (the venv internal/export's tests make from
internal/export/testdata/pyarrow-datasets.txt will do). The script
generates N trajectories (default 1,000,000) whose sft rows are about 2 KB
each: a system prompt, a task and three agent turns with their tool
results, each message made of code-like lines drawn from a pool of 100,000
generated lines (so text repeats across records about as much as code
does). It writes their sft rows as JSONL once with cwm export (the "same
JSONL" pyarrow reads), then alternates R rounds (default 3) of

  cwm:     cwm export sft --in TRAJ.jsonl --out cwm.parquet   (zstd)
  pyarrow: pyarrow.json.read_json(SFT.jsonl) and pq.write_table(..., zstd)

timing each from the start of its process or call to its end (wall) and
its CPU time (user and system: getrusage of the child for cwm, of this
process for pyarrow, whose reader and writer use threads), and the
write_table call alone. It prints each round, the medians, the ratio of
cwm's time to pyarrow's and the sizes of the Parquet files and the JSONL,
and cwm's peak RSS (GNU time's).
"""
import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import time

import pyarrow.json as pj
import pyarrow.parquet as pq

WORDS = ["self", "value", "result", "items", "key", "path", "data", "node", "index",
         "config", "parser", "token", "buffer", "count", "name", "args", "kwargs", "line"]


def code_line(rnd):
    a, b, c = rnd.choice(WORDS), rnd.choice(WORDS), rnd.choice(WORDS)
    n = rnd.randrange(1000)
    return rnd.choice([
        "    %s = %s.%s(%s, %d)" % (a, b, c, a, n),
        "    if %s_%d is None or len(%s) > %d:" % (a, n, b, n),
        "        return %s[%d] + %s.%s" % (a, n, b, c),
        "def %s_%s_%d(%s, %s=None):" % (a, c, n, b, c),
        "tests/test_%s.py::test_%s_%d PASSED" % (a, b, n),
        "%s/%s_%d.py:%d: %sError: %s" % (a, b, n, n, c.capitalize(), c),
    ])


def generate(path, n, seed=1):
    rnd = random.Random(seed)
    pool = [code_line(rnd) for _ in range(100_000)]
    with open(path, "w") as f:
        for i in range(n):
            def text(k):
                return "\n".join(rnd.choices(pool, k=k))
            msgs = [{"role": "system", "content": "You are a helpful assistant that can interact with a computer to solve tasks."},
                    {"role": "user", "content": "Fix the failing test.\n" + text(4)}]
            for _ in range(3):
                msgs.append({"role": "assistant", "content": "<tool: bash>\n" + text(2) + "\n</tool>"})
                msgs.append({"role": "tool", "content": "<output>\n" + text(7) + "\n</output>"})
            t = {"task_id": "owner%d__repo%d-%d" % (i % 997, i % 997, i), "sample": 0, "messages": msgs,
                 "reward": float(i % 2), "resolved": bool(i % 2)}
            f.write(json.dumps(t) + "\n")


def cpu(who):
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


def run_cwm(cwm, args, rss_file):
    # cwm runs under GNU time, which reports its peak RSS: getrusage of
    # this process's children would count the Python process it was
    # forked from, holding pyarrow's table.
    t0, c0 = time.perf_counter(), cpu(resource.RUSAGE_CHILDREN)
    subprocess.run(["/usr/bin/time", "-f", "%M", "-o", rss_file, cwm, "export", "sft", "--exclude-repos", "none"] + args,
                   check=True, stdout=subprocess.DEVNULL)
    with open(rss_file) as f:
        rss = int(f.read().split()[-1])
    return time.perf_counter() - t0, cpu(resource.RUSAGE_CHILDREN) - c0, rss


def run_pyarrow(jsonl, out):
    t0, c0 = time.perf_counter(), cpu(resource.RUSAGE_SELF)
    table = pj.read_json(jsonl)
    t1 = time.perf_counter()
    pq.write_table(table, out, compression="zstd")
    t2 = time.perf_counter()
    return t2 - t0, cpu(resource.RUSAGE_SELF) - c0, t2 - t1, table.num_rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cwm", required=True)
    ap.add_argument("--dir", default="/tmp/cwm-export-bench")
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    traj = os.path.join(a.dir, "traj.jsonl")
    sft = os.path.join(a.dir, "jsonl", "sft.jsonl")
    cwm_pq = os.path.join(a.dir, "cwm", "sft.parquet")
    pa_pq = os.path.join(a.dir, "pyarrow.parquet")
    for d in ("jsonl", "cwm"):
        os.makedirs(os.path.join(a.dir, d), exist_ok=True)
    t0 = time.perf_counter()
    generate(traj, a.records)
    print("generated %d trajectories (%d bytes) in %.0fs" % (a.records, os.path.getsize(traj), time.perf_counter() - t0))
    rss_file = os.path.join(a.dir, "rss")
    t, _, _ = run_cwm(a.cwm, ["--in", traj, "--out", sft], rss_file)
    print("cwm export sft to JSONL: %.1fs, %d bytes, %.0f bytes a row" % (t, os.path.getsize(sft), os.path.getsize(sft) / a.records))
    cwm_t, cwm_c, pa_t, pa_c, pa_w, rss = [], [], [], [], [], []
    for r in range(a.rounds):
        wall, c, r = run_cwm(a.cwm, ["--in", traj, "--out", cwm_pq], rss_file)
        rss.append(r)
        cwm_t.append(wall)
        cwm_c.append(c)
        total, c, write, rows = run_pyarrow(sft, pa_pq)
        assert rows == a.records, rows
        pa_t.append(total)
        pa_c.append(c)
        pa_w.append(write)
        print("round %d: cwm %.1fs wall %.1fs CPU; pyarrow read_json+write_table %.1fs wall %.1fs CPU (write_table %.1fs wall)"
              % (r + 1, cwm_t[-1], cwm_c[-1], total, pa_c[-1], write))
    mc, mp, mw = statistics.median(cwm_t), statistics.median(pa_t), statistics.median(pa_w)
    cc, pc = statistics.median(cwm_c), statistics.median(pa_c)
    js, cs, ps = os.path.getsize(sft), os.path.getsize(cwm_pq), os.path.getsize(pa_pq)
    print("median: cwm %.1fs wall %.1fs CPU, pyarrow %.1fs wall %.1fs CPU (write_table alone %.1fs wall)" % (mc, cc, mp, pc, mw))
    print("ratio cwm/pyarrow: wall %.2f, CPU %.2f (wall against write_table alone: %.2f)" % (mc / mp, cc / pc, mc / mw))
    print("sizes: JSONL %d, cwm Parquet %d (%.3f of the JSONL), pyarrow Parquet %d (%.3f)" % (js, cs, cs / js, ps, ps / js))
    print("cwm's peak RSS: %d MiB" % (max(rss) // 1024))
    rows_c = pq.ParquetFile(cwm_pq).metadata
    print("cwm's file: %d rows in %d row groups" % (rows_c.num_rows, rows_c.num_row_groups))


if __name__ == "__main__":
    sys.exit(main())
