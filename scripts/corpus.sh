#!/usr/bin/env bash
# corpus.sh builds an environment for every row of a corpus list with
# `cwm env build` as a user runs it (online, the default: the repository's
# own dependencies from the index through cwm's egress relay), no
# overrides, on a Debian base with the Python the project needs
# (--portable), and checks each usable one against a plain venv + pip
# install of the same lock + the same test command, run in a sandbox on the
# same base (cwm sandbox run), never on the host. It prints one Markdown
# table row per (repository, commit) as it goes and the totals at the end
# (docs/environments.md, "The corpora").
#
# usage: scripts/corpus.sh [-c CWM] [-o OUTDIR] [-l LIST] [-w WHICH] [-r RUNS]
#                          [-b STORE] [-P PACKAGES] [-T MINUTES] [-I MINUTES]
#                          [-k|-t|-p] [-n]
#                          CLONES [NAME...]
#   -c CWM      the cwm binary (default: cwm on PATH)
#   -o OUTDIR   where manifests, logs and the rows go (default /tmp/cwm-corpus);
#               the environments and bases are stored in OUTDIR/home (CWM_HOME)
#   -l LIST     corpus (scripts/corpus/repos.txt, the default), corpus2
#               (scripts/corpus2/repos.txt) or a list file: rows of
#               "OWNER/NAME COMMIT [TRAITS]" or, two commits a row,
#               "OWNER/NAME NEW DATE OLD DATE [TRAITS]"
#   -w WHICH    of a two-commit list: new, old or both (default both)
#   -r RUNS     baseline runs per build (default 3)
#   -b STORE    a CWM_HOME whose Debian bases (bullseye, bookworm, trixie)
#               are linked into OUTDIR/home instead of being built there
#               with cwm base build --debian SUITE (repeatable)
#   -P PACKAGES the bases' --packages (default build-essential,python3-dev,
#               pkg-config: a C compiler and Python's headers, which
#               projects with C extensions build with)
#   -T MINUTES  the wall-clock limit of one baseline run (cwm env build
#               --timeout; default 15), for suites that outlast it on a
#               loaded machine; the build's own limit grows with it
#   -I MINUTES  the wall-clock limit of one install step (cwm env build
#               --install-timeout; default 10), for a long compile
#   -k          keep going from a previous run: rows already in
#               OUTDIR/rows are not built again, nor is a row whose build
#               finished (a killed run goes on where it stopped; to build
#               a row again, remove its OUTDIR/rows/KEY and
#               OUTDIR/logs/KEY.secs)
#   -t          only tabulate again from the manifests and plain runs in
#               OUTDIR (rows not built yet are left out and counted)
#   -p          run the plain side again on the environments in OUTDIR (no builds)
#   -n          no plain side: rows say "-" in its columns (-p runs it later)
#   CLONES      a directory of clones named OWNER+NAME/repo (bare or not;
#               required, it may be empty): a repository not there is
#               cloned from GitHub by cwm env build
#   NAME...     only the repositories whose OWNER/NAME contains one of these
#
# One build at a time: a second run on the same OUTDIR waits for the first
# (-t does not).
set -u -o pipefail

CWM=cwm OUT=/tmp/cwm-corpus LIST=corpus WHICH=both RUNS=3 STORE="" KEEP=0 TABULATE=0 PLAIN=0 NOPLAIN=0 TESTMIN=15 INSTMIN=10
PACKAGES=build-essential,python3-dev,pkg-config
usage() { sed -n '2,51p' "$0" >&2; exit 2; }
while getopts c:o:l:w:r:b:P:T:I:ktpn opt; do
	case $opt in
	c) CWM=$OPTARG ;;
	o) OUT=$OPTARG ;;
	l) LIST=$OPTARG ;;
	w) WHICH=$OPTARG ;;
	r) RUNS=$OPTARG ;;
	b) STORE="$STORE $OPTARG" ;;
	P) PACKAGES=$OPTARG ;;
	T) TESTMIN=$OPTARG ;;
	I) INSTMIN=$OPTARG ;;
	k) KEEP=1 ;;
	t) TABULATE=1 ;;
	p) PLAIN=1 ;;
	n) NOPLAIN=1 ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
if [ $# -lt 1 ]; then
	echo "corpus: the clone directory (CLONES) is required" >&2
	usage
fi
MIRRORS=$1
shift
[ -d "$MIRRORS" ] || { echo "corpus: clone directory $MIRRORS: not a directory" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
case $LIST in
corpus | corpus2) list=$here/$LIST/repos.txt ;;
*) list=$LIST ;;
esac
[ -f "$list" ] || { echo "corpus: list $list: no such file" >&2; exit 2; }
case $WHICH in new | old | both) ;; *) echo "corpus: -w $WHICH: want new, old or both" >&2; exit 2 ;; esac
[[ $TESTMIN =~ ^[1-9][0-9]*$ ]] || { echo "corpus: -T $TESTMIN: want whole minutes" >&2; exit 2; }
[[ $INSTMIN =~ ^[1-9][0-9]*$ ]] || { echo "corpus: -I $INSTMIN: want whole minutes" >&2; exit 2; }
CWM=$(command -v "$CWM") || { echo "corpus: no cwm binary (-c)" >&2; exit 2; }
for tool in jq git python3 perl flock; do
	command -v $tool >/dev/null || { echo "corpus: $tool is needed" >&2; exit 2; }
done

mkdir -p "$OUT/rows" "$OUT/logs" "$OUT/plain"
export CWM_HOME=$OUT/home
# One build at a time: a run waits for another on the same OUTDIR (-t
# only reads, and does not wait).
exec 9>"$OUT/lock"
[ $TABULATE = 1 ] || flock 9

# ensure_bases puts the Debian bases with PACKAGES into CWM_HOME: linked
# from a STORE (-b) that has them, else built (cwm base build --debian
# SUITE --packages PACKAGES, once). A build chooses among the bases of
# its store; of two with the same Python, the newest stored.
ensure_bases() {
	local suite have dir st b
	mkdir -p "$CWM_HOME/bases" "$CWM_HOME/blobs/sha256"
	for suite in bullseye bookworm trixie; do
		have=$("$CWM" base ls --json 2>/dev/null | jq -r --arg s "debian $suite $PACKAGES" '.[]? | select(.source.kind + " " + .source.suite + " " + ((.source.packages // []) | join(",")) == $s) | .digest' | head -1)
		[ -n "$have" ] && continue
		dir=""
		for st in $STORE; do
			for b in "$st"/bases/*/base.json; do
				[ -z "$dir" ] && [ -f "$b" ] && [ "$(jq -r '.source.kind + " " + .source.suite + " " + ((.source.packages // []) | join(","))' "$b")" = "debian $suite $PACKAGES" ] && dir=$b
			done
		done
		if [ -n "$dir" ]; then
			st=$(dirname "$(dirname "$(dirname "$dir")")")
			dir=$(dirname "$dir")
			echo "corpus: linking the $suite base from $st" >&2
			cp -a --link "$dir" "$CWM_HOME/bases/" 2>/dev/null || cp -a "$dir" "$CWM_HOME/bases/" || exit 1
			for b in "$st"/blobs/sha256/*; do
				[ -e "$b" ] && { ln -f "$b" "$CWM_HOME/blobs/sha256/" 2>/dev/null || cp "$b" "$CWM_HOME/blobs/sha256/"; }
			done
		else
			echo "corpus: building the $suite base" >&2
			"$CWM" base build --debian "$suite" --packages "$PACKAGES" >&2 || exit 1
		fi
	done
}
[ $TABULATE = 1 ] || ensure_bases

# plain_command prints the test command of manifest $1 as the runner alone
# runs it, reporting each passing test: pytest with -rA, unittest with -v,
# anything else as written with PYTEST_ADDOPTS=-rA. pytest gets the two
# options of cwm's that change outcomes: --continue-on-collection-errors and
# the filter that keeps unknown configuration options from failing a run.
# pytest-pretty is kept from replacing the short summary that -rA writes
# and passing_ids reads (pydantic's dev group has it).
plain_command() {
	jq -r '.test_command as $c
	  | ("cd /repo" + (if ($c.dir // "") != "" then "/" + $c.dir else "" end) + " && ")
	  + ((($c.env // []) | map(@sh) | join(" ")) + " ")
	  + (if $c.framework == "pytest" then
	       "python -m pytest -p no:cacheprovider -p no:pretty --continue-on-collection-errors -W ignore::pytest.PytestConfigWarning " + (($c.args // []) | map(@sh) | join(" ")) + " -rA --color=no"
	     elif $c.framework == "unittest" then
	       (if (($c.args // [])[0] // "") == "discover" then
	          "python -m unittest discover -v " + (($c.args[1:]) | map(@sh) | join(" "))
	        else "python -m unittest -v " + (($c.args // []) | map(@sh) | join(" ")) end)
	     else "PYTEST_ADDOPTS=\"-rA -p no:cacheprovider -W ignore::pytest.PytestConfigWarning\" bash -c " + ($c.line | @sh) end)' "$1"
}

# passing_ids reads a plain run's output and prints the ids of the tests
# it reports passing: pytest's short summary (only there: a test's own
# output may hold such lines; and only the last one: the output -rA shows
# of a passing test comes before it, and a test of pytest's own, through
# pytester, prints a whole session's, with its own summary) (PASSED
# nodeid, and XPASS: an expected failure whose body passed, which cwm
# counts as a pass, as pytest's JUnit report does) and unittest's verbose
# lines, read by the rules of
# cwm's own parser (internal/testrun/unittest.go), so both sides of a row
# are read alike: "name (id) ... STATUS", where the status may come lines
# later, after a docstring or whatever the test printed ("name (id) ...
# CHARACTER MATCH 'a'" then "ok"); a subtest's line ("  name (id) (i=2)")
# adds its status to its test's; the summary's "FAIL: name (id)" and
# "ERROR: name (id)" mark the test failed; a test whose status never came
# passed when the run got as far as "Ran N tests", as cwm counts it. A
# doctest's line is "name (module)", its id module.name. A test pytest also
# reports as ERROR or FAILED (its body passed, its teardown did not) did
# not pass, as cwm counts it.
passing_ids() {
	perl -ne '
		s/\r?\n$//;
		if (/^=+ short test summary info =+$/) { $summary = 1; %spass = (); %sbad = (); next }
		if ($summary && /^PASSED (.+?)\s*$/) { $spass{$1} = 1; next }
		if ($summary && /^XPASS ((?:[^\s\[]|\[[^\]]*\])+)/) { $spass{$1} = 1; next }
		if ($summary && /^(?:ERROR|FAILED) ((?:[^\s\[]|\[[^\]]*\])+)/) { $sbad{$1} = 1; next }
		sub uid { my ($n, $w) = @_;
			return $n if $w =~ /^unittest\.loader\._FailedTest/;
			return $w if $n =~ /^(?:setUpClass|tearDownClass|setUpModule|tearDownModule)$/;
			return $w if $w =~ /\.\Q$n\E$/;
			return "$w.$n" }
		# the status words of a verbose line: 1 pass, 2 skip, 3 failed; 0 none
		sub status { my $s = shift; $s =~ s/^\s+|\s+$//g;
			return 1 if $s eq "ok";
			return 2 if $s eq "expected failure" || $s =~ /^skipped/;
			return 3 if $s eq "FAIL" || $s eq "ERROR" || $s eq "unexpected success";
			return 0 }
		sub mark { my ($id, $st) = @_; $ut{$id} = $st if $st > ($ut{$id} // 0) }
		if (/^Ran \d+ tests? in /) { $finished = 1; next }
		if (/^======/) { $insum = 1; $pending = ""; next }
		if (/^(?:FAIL|ERROR|UNEXPECTED SUCCESS): (\w+) \(([\w.]+)\)/) { mark(uid($1, $2), 3); next }
		next if $insum;
		if (/^(\s*)(\w+) \(([\w.]+)\)(?: \((.*?)\))?(?: \.\.\. (.*))?$/) {
			my ($sub, $id) = ($1 ne "" || defined $4, uid($2, $3));
			$ut{$id} //= 0;
			if (my $st = status($5 // "")) { mark($id, $st); $pending = "" unless $sub }
			elsif (!$sub) { $pending = $id }
			next }
		next if $pending eq "";
		my $s = $_; $s = substr($s, rindex($s, " ... ") + 5) if index($s, " ... ") >= 0;
		if (my $st = status($s)) { mark($pending, $st); $pending = "" }
		END {
			$pass{$_} = 1 for keys %spass; $bad{$_} = 1 for keys %sbad;
			for (keys %ut) { $pass{$_} = 1 if $ut{$_} == 1 || ($ut{$_} == 0 && $finished) }
			print "$_\n" for grep { !$bad{$_} } keys %pass }
	' | sort -u
}

# plain_run runs the plain side of manifest $1 (key $2): a fresh checkout
# of the environment's commit (from its layer's repository: the commit
# and the tags cwm kept), a wheelhouse of the lock's files staged on the
# host, then in a sandbox on the environment's base, with no network:
# python3 -m venv, pip 26 from the wheelhouse, pip install --require-hashes
# --no-deps of the lock, each local project editable with --no-deps (as
# it was when it cannot be editable), and the test command. Its output goes to logs/KEY.plain.
plain_run() {
	local man=$1 key=$2 id layer dir py base
	id=$(jq -r .id "$man")
	layer=$CWM_HOME/envs/$id/layer
	dir=$OUT/plain/$key
	rm -rf "$dir" && mkdir -p "$dir/layer/wh"
	git clone -q --no-local "$layer/repo" "$dir/layer/repo" 2>"$OUT/logs/$key.plain" || return 1
	git -C "$dir/layer/repo" checkout -q "$(jq -r .commit "$man")" 2>>"$OUT/logs/$key.plain" || return 1
	py=$(jq -r '.python | split(".")[:2] | join(".")' "$man")
	base=$(jq -r .base "$man")
	python3 "$here/corpus/plain-wheelhouse.py" "$man" "$dir/layer/repo" "$CWM_HOME/tools/pip-26.0.1-py3-none-any.whl" "$py" "$dir/layer/wh" \
		>>"$OUT/logs/$key.plain" 2>&1 || return 1
	plain_command "$man" >"$dir/layer/wh/test.sh"
	cat >"$dir/layer/wh/plain.sh" <<-'PLAIN'
		set -e
		python3 -m venv /tmp/plain
		export PATH=/tmp/plain/bin:$PATH VIRTUAL_ENV=/tmp/plain
		pip install -q --no-index --find-links /wh pip==26.0.1
		pip install -q --no-index --find-links /wh --require-hashes --no-deps -r /wh/plain-lock.txt
		# Editable, as cwm's steps mostly install them; a local project
		# that cannot be (mypy's mypyc/lib-rt, installed with pip install
		# -U mypyc/lib-rt) as it was.
		# A meson-python project without build isolation, as
		# meson-python says (its build requirements are in the lock).
		while read -r p; do
			iso=
			grep -qs 'build-backend *= *"mesonpy"' "$p/pyproject.toml" && iso=--no-build-isolation
			pip install -q --no-index --find-links /wh --no-deps $iso -e "$p" ||
				pip install -q --no-index --find-links /wh --no-deps "$p"
		done </wh/plain-local.txt
		echo "== the test command: $(cat /wh/test.sh)"
		set +e
		. /wh/test.sh
	PLAIN
	local plainmin=$((TESTMIN + 20 > 35 ? TESTMIN + 20 : 35))
	timeout $((plainmin + 5))m nice "$CWM" sandbox run --base "$base" --layer "$dir/layer" --workdir /repo \
		--timeout ${plainmin}m --memory 6G --disk 8G --cpu 2h --output 1G --pids 4096 \
		-- bash /wh/plain.sh >>"$OUT/logs/$key.plain" 2>&1 </dev/null
}

row() { printf '| %s |\n' "$(IFS='|'; echo "$*" | sed 's/|/ | /g')"; }

echo "| repository | commit | Python | usable | recipe source (install / test) | passing in every run | plain run passing | same set | build s | plain s | layer MB | reason |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
n=0 usable=0 equal=0 notyet=0
while read -r repo c1 d1 c2 d2 traits; do
	case $repo in '' | '#'*) continue ;; esac
	if [ $# -gt 0 ]; then
		hit=0
		for f in "$@"; do case $repo in *"$f"*) hit=1 ;; esac; done
		[ $hit = 1 ] || continue
	fi
	commits=$c1
	if [[ ${d1:-} =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}$ ]]; then
		case $WHICH in new) commits=$c1 ;; old) commits=$c2 ;; both) commits="$c1 $c2" ;; esac
	fi
	for commit in $commits; do
	name=${repo#*/}-${commit:0:8}
	key=${repo/\//+}@${commit:0:8}
	if [ $TABULATE = 1 ] && ! [ -e "$OUT/logs/$key.secs" ]; then
		notyet=$((notyet + 1)) # not built yet: no row
		continue
	fi
	n=$((n + 1))
	if [ $KEEP = 1 ] && [ -s "$OUT/rows/$key" ]; then
		line=$(cat "$OUT/rows/$key")
	else
		src=$MIRRORS/${repo/\//+}/repo
		[ -d "$src" ] || src=https://github.com/$repo
		man=$OUT/logs/$key.json
		start=$(date +%s)
		# -k after a run killed past its build: the build stands.
		again=0
		[ $KEEP = 1 ] && [ -s "$OUT/logs/$key.secs" ] && jq -e .id "$man" >/dev/null 2>&1 && again=1
		[ $TABULATE = 1 ] || [ $PLAIN = 1 ] || [ $again = 1 ] || timeout $((TESTMIN * (RUNS + 1) + INSTMIN * 3))m nice "$CWM" env build "$src" --rev "$commit" --name "$name" --runs "$RUNS" \
			--portable --no-coverage --force --json --timeout "${TESTMIN}m" --install-timeout "${INSTMIN}m" >"$man" 2>"$OUT/logs/$key.err" </dev/null
		secs=$(($(date +%s) - start))
		[ $TABULATE = 1 ] || [ $PLAIN = 1 ] || [ $again = 1 ] && secs=$(cat "$OUT/logs/$key.secs" 2>/dev/null || echo -)
		echo "$secs" >"$OUT/logs/$key.secs"
		if ! [ -s "$man" ] || ! jq -e .id "$man" >/dev/null 2>&1; then
			reason=$(tr -d '\0' <"$OUT/logs/$key.err" | grep -v '^\s*$' | tail -1 | tr '|' ' ' | cut -c1-300)
			line=$(row "$repo" "${commit:0:8}" - no "-" - - - "$secs" - - "build did not finish: ${reason:-no output}")
		else
			id=$(jq -r .id "$man")
			ok=$(jq -r 'if .usable then "yes" else "no" end' "$man")
			py=$(jq -r .python "$man")
			srcs=$(jq -r '[(.install | map(.provenance) | unique | join("+")), .test.provenance] | map(if . == "" then "-" else . end) | join(" / ")' "$man")
			jq -r '.[] | select(.status == "pass") | .id' "$CWM_HOME/envs/$id/baseline.json" 2>/dev/null | sort -u >"$OUT/logs/$key.cwm-pass"
			pass=$(wc -l <"$OUT/logs/$key.cwm-pass")
			mb=$(jq -r '(.layer_bytes / 1048576 * 10 | round) / 10' "$man")
			reason=$(jq -r '.reason // ""' "$man" | tr '\n|' '  ' | cut -c1-300)
			plain="-" same="-" psecs="-"
			if [ "$ok" = yes ] && { [ $NOPLAIN = 1 ] && [ $PLAIN = 0 ] || { [ $TABULATE = 1 ] && ! [ -e "$OUT/logs/$key.plain" ]; }; }; then
				: # no plain side (-n): its columns stay "-"
			elif [ "$ok" = yes ]; then
				pstart=$(date +%s)
				if [ $TABULATE = 1 ]; then
					psecs=$(cat "$OUT/logs/$key.plain-secs" 2>/dev/null || echo -)
				else
					plain_run "$man" "$key"
					psecs=$(($(date +%s) - pstart))
					echo "$psecs" >"$OUT/logs/$key.plain-secs"
				fi
				passing_ids <"$OUT/logs/$key.plain" >"$OUT/logs/$key.plain-pass"
				plain=$(wc -l <"$OUT/logs/$key.plain-pass")
				if cmp -s "$OUT/logs/$key.cwm-pass" "$OUT/logs/$key.plain-pass"; then
					same=yes
				else
					same=no
					d=$(diff "$OUT/logs/$key.cwm-pass" "$OUT/logs/$key.plain-pass" | grep -c '^[<>]')
					reason="$d ids differ (${key}.cwm-pass vs .plain-pass)${reason:+; $reason}"
				fi
			fi
			line=$(row "$repo" "${commit:0:8}" "$py" "$ok" "$srcs" "$pass" "$plain" "$same" "$secs" "$psecs" "$mb" "$reason")
		fi
		echo "$line" >"$OUT/rows/$key"
	fi
	echo "$line"
	case $line in "| $repo | ${commit:0:8} | "*" | yes | "*) usable=$((usable + 1)) ;; esac
	[ "$(echo "$line" | awk -F' \\| ' '{print $4 $8}')" = "yesyes" ] && equal=$((equal + 1))
	done
done <"$list"
echo
echo "$n rows: $usable usable, $equal usable with the same passing set as the plain run."
[ $notyet = 0 ] || echo "$notyet rows not built yet."
