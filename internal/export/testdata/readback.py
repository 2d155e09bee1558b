"""Reads cwm export's Parquet files back with pyarrow and with Hugging Face
datasets and checks their rows equal the JSONL export's rows.

    readback.py files A.jsonl A.parquet [B.jsonl B.parquet ...]
    readback.py card JSONL_DIR PARQUET_DIR

"card" loads PARQUET_DIR as a dataset (its README.md names the splits and
the features) and compares each split with JSONL_DIR's file of that name.
"""
import json
import sys

import datasets
import pyarrow.parquet as pq


def jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def check(want, got, reader, path):
    if len(want) != len(got):
        sys.exit("%s read %d rows of %s, the JSONL has %d" % (reader, len(got), path, len(want)))
    for i, (w, g) in enumerate(zip(want, got)):
        if w != g:
            sys.exit("%s: row %d of %s differs from the JSONL's:\n%r\n%r" % (reader, i, path, g, w))


def main():
    datasets.disable_progress_bars()
    if sys.argv[1] == "files":
        for jl, pqf in zip(sys.argv[2::2], sys.argv[3::2]):
            want = jsonl(jl)
            check(want, pq.read_table(pqf).to_pylist(), "pyarrow", pqf)
            ds = datasets.load_dataset("parquet", data_files=pqf, split="train")
            check(want, ds.to_list(), "datasets", pqf)
            print("%s: %d rows equal" % (pqf, len(want)))
    elif sys.argv[1] == "card":
        jdir, pdir = sys.argv[2], sys.argv[3]
        dd = datasets.load_dataset(pdir)
        if sorted(dd.keys()) != ["eval", "train"]:
            sys.exit("splits %s, want eval and train" % sorted(dd.keys()))
        for split, ds in dd.items():
            check(jsonl("%s/%s.jsonl" % (jdir, split)), ds.to_list(), "datasets (card)", "%s/%s" % (pdir, split))
            print("%s: %d rows equal" % (split, len(ds)))
    else:
        sys.exit("unknown mode %r" % sys.argv[1])


if __name__ == "__main__":
    main()
