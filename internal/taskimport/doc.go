// Package taskimport is cwm tasks import: the SWE-bench family's published
// datasets (SWE-bench, SWE-Gym, R2E-Gym, SWE-smith, SWE-rebench V2) read
// from their rows (JSONL, JSON or Parquet, as published), their images
// pulled by the names the rows give (from a registry or a mirror) and
// stored as cwm bases by digest through basebuild's import (the hardened
// extractor, the image's configuration applied), and each instance made a
// cwm task whose Imported part says how the dataset's own harness runs and
// grades it (format.go holds the table).
//
// Import validates what it brings in, since a task that does not hold is
// worse than none: each task is graded three times with the empty patch
// (FAIL_TO_PASS must fail) and three times with the gold patch (every test
// must pass), each run in a fresh sandbox on its image; a task that fails
// a check is kept out with the reason (image missing, gold fails, no-op
// passes, flaky, parser found no tests), as is a row that is not one
// (duplicate instance_id, missing or null fields, non-UTF-8 text, a huge
// problem statement, a gold patch that touches test files), in the
// validation report. See docs/tasks.md, "Importing the field's datasets".
package taskimport
