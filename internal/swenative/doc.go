// Package swenative builds SWE-bench's instances from source, without
// their images: for each (repository, version) of a dataset, one cwm
// environment made by envbuild at the version's environment_setup_commit
// from the harness's own specification (read at run time from an
// installed swebench package, never copied here), its conda packages,
// requirement files and pre-install lines translated to what a Debian
// base and pip can do; then every instance of that version is validated
// on it as taskimport validates an image's task, at its base_commit with
// the test patch applied as the harness does, graded by SWE-bench's
// parser for the repository. What could not be translated, and why an
// instance did not hold, is in the report. See docs/tasks.md ("SWE-bench
// from source").
package swenative
