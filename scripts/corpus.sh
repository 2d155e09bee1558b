#!/usr/bin/env bash
# corpus.sh builds an environment for every repository of the corpus
# (scripts/corpus/repos.txt) with `cwm env build`, no overrides, and checks
# each usable one against a plain run of the same test command by the test
# runner alone, in a fresh sandbox on the same layer (`cwm env shell`), never
# on the host. It prints one Markdown table row per repository as it goes and
# the totals at the end (docs/environments.md, "The corpus").
#
# usage: scripts/corpus.sh [-c CWM] [-o OUTDIR] [-r RUNS] [-k|-t|-p] CLONES [NAME...]
#   -c CWM      the cwm binary (default: cwm on PATH)
#   -o OUTDIR   where manifests, logs and the table go (default /tmp/cwm-corpus);
#               the environments are stored in OUTDIR/home (CWM_HOME)
#   -r RUNS     baseline runs per build (default 3)
#   -k          keep going from a previous run: repositories with a row in
#               OUTDIR/rows are not built again
#   -t          only tabulate again from the manifests and plain runs in OUTDIR
#   -p          run the plain runs again on the environments in OUTDIR (no builds)
#   CLONES      a directory of clones named OWNER+NAME/repo (bare or not;
#               required, it may be empty): a repository not there is
#               cloned from GitHub by cwm env build
#   NAME...     only the repositories whose OWNER/NAME contains one of these
#
# The repositories' runtime and test dependencies come from Debian: the
# packages below are installed first when missing (root only).
set -u -o pipefail

CWM=cwm OUT=/tmp/cwm-corpus RUNS=3 KEEP=0 TABULATE=0 PLAIN=0
while getopts c:o:r:ktp opt; do
	case $opt in
	c) CWM=$OPTARG ;;
	o) OUT=$OPTARG ;;
	r) RUNS=$OPTARG ;;
	k) KEEP=1 ;;
	t) TABULATE=1 ;;
	p) PLAIN=1 ;;
	*) sed -n '2,25p' "$0" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
if [ $# -lt 1 ]; then
	echo "corpus: the clone directory (CLONES) is required" >&2
	sed -n '2,25p' "$0" >&2
	exit 2
fi
MIRRORS=$1
shift
[ -d "$MIRRORS" ] || { echo "corpus: clone directory $MIRRORS: not a directory" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
list=$here/corpus/repos.txt
CWM=$(command -v "$CWM") || { echo "corpus: no cwm binary (-c)" >&2; exit 2; }

DEBS="python3-dev python3-pytest python3-venv python3-setuptools flit python3-flit-scm
python3-hatchling python3-hatch-vcs python3-poetry-core python3-pdm-pep517
python3-setuptools-scm python3-typing-extensions python3-markupsafe python3-hypothesis
python3-pretend python3-freezegun python3-pytest-mock python3-pytest-asyncio
python3-pytest-timeout python3-simplejson python3-tomli python3-zope.event
python3-zope.testing python3-zope.testrunner python3-appdirs python3-virtualenv
python3-jinja2 python3-railroad-diagrams python3-pytest-subtests python3-psutil
python3-coverage python3-trio python3-pytest-xdist python3-testpath python3-mypy"
missing=""
for p in $DEBS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
	if [ "$(id -u)" = 0 ]; then
		echo "corpus: installing$missing" >&2
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null || exit 1
	else
		echo "corpus: missing Debian packages (install them as root):$missing" >&2
	fi
fi

mkdir -p "$OUT/rows" "$OUT/logs"
export CWM_HOME=$OUT/home

# plain_command prints the test command of manifest $1 as the runner alone
# runs it, reporting each passing test: pytest with -rA, unittest with -v,
# anything else as written with PYTEST_ADDOPTS=-rA. pytest gets the two
# options of cwm's that change outcomes: --continue-on-collection-errors and
# the filter that keeps unknown configuration options from failing a run.
plain_command() {
	jq -r '.test_command as $c
	  | ("cd /repo" + (if ($c.dir // "") != "" then "/" + $c.dir else "" end) + " && ")
	  + ((($c.env // []) | map(@sh) | join(" ")) + " ")
	  + (if $c.framework == "pytest" then
	       "python -m pytest -p no:cacheprovider --continue-on-collection-errors -W ignore::pytest.PytestConfigWarning " + (($c.args // []) | map(@sh) | join(" ")) + " -rA --color=no"
	     elif $c.framework == "unittest" then
	       (if (($c.args // [])[0] // "") == "discover" then
	          "python -m unittest discover -v " + (($c.args[1:]) | map(@sh) | join(" "))
	        else "python -m unittest -v " + (($c.args // []) | map(@sh) | join(" ")) end)
	     else "PYTEST_ADDOPTS=\"-rA -p no:cacheprovider -W ignore::pytest.PytestConfigWarning\" bash -c " + ($c.line | @sh) end)' "$1"
}

# passing_ids reads a plain run's output and prints the ids of the tests
# it reports passing: pytest's short summary (only there: a test's own
# output may hold such lines) (PASSED nodeid, and XPASS: an
# expected failure whose body passed, which cwm counts as a pass, as pytest's
# JUnit report does) and unittest's
# verbose lines ("name (id) ... ok", the docstring line in between or not;
# a doctest's line is "name (module)", its id module.name). A test pytest
# also reports as ERROR or FAILED (its body passed, its teardown did not)
# did not pass, as cwm counts it.
passing_ids() {
	perl -ne '
		if (/^=+ short test summary info =+$/) { $summary = 1; next }
		if ($summary && /^PASSED (.+?)\s*$/) { $pass{$1} = 1; next }
		if ($summary && /^XPASS ((?:[^\s\[]|\[[^\]]*\])+)/) { $pass{$1} = 1; next }
		if ($summary && /^(?:ERROR|FAILED) ((?:[^\s\[]|\[[^\]]*\])+)/) { $bad{$1} = 1; next }
		if (/^(\w+) \(([\w.]+)\)(.*)$/) { $id = $2; $rest = $3;
			$id = "$2.$1" unless $2 =~ /\.\Q$1\E$/;
			if ($rest =~ / \.\.\. ok$/) { $pass{$id} = 1; $id = "" } next }
		if ($id ne "" && / \.\.\. ok$/) { $pass{$id} = 1 } $id = "";
		END { print "$_\n" for grep { !$bad{$_} } keys %pass }
	' | sort -u
}

row() { printf '| %s |\n' "$(IFS='|'; echo "$*" | sed 's/|/ | /g')"; }

echo "| repository | usable | recipe source (install / test) | passing in every run | plain run passing | same set | build s | layer MB | reason |"
echo "|---|---|---|---|---|---|---|---|---|"
n=0 usable=0 equal=0
while read -r repo commit traits; do
	case $repo in '' | '#'*) continue ;; esac
	if [ $# -gt 0 ]; then
		hit=0
		for f in "$@"; do case $repo in *"$f"*) hit=1 ;; esac; done
		[ $hit = 1 ] || continue
	fi
	n=$((n + 1))
	name=${repo#*/}
	key=${repo/\//+}
	if [ $KEEP = 1 ] && [ -s "$OUT/rows/$key" ]; then
		line=$(cat "$OUT/rows/$key")
	else
		src=$MIRRORS/$key/repo
		[ -d "$src" ] || src=https://github.com/$repo
		man=$OUT/logs/$key.json
		start=$(date +%s)
		[ $TABULATE = 1 ] || [ $PLAIN = 1 ] || timeout 15m nice "$CWM" env build "$src" --rev "$commit" --name "$name" --runs "$RUNS" \
			--no-coverage --force --json >"$man" 2>"$OUT/logs/$key.err" </dev/null
		secs=$(($(date +%s) - start))
		[ $TABULATE = 1 ] || [ $PLAIN = 1 ] && secs=-
		if ! [ -s "$man" ] || ! jq -e .id "$man" >/dev/null 2>&1; then
			reason=$(grep -v '^\s*$' "$OUT/logs/$key.err" | tail -1 | cut -c1-200)
			line=$(row "$repo" no "-" - - - "$secs" - "build did not finish: ${reason:-no output}")
		else
			id=$(jq -r .id "$man")
			ok=$(jq -r 'if .usable then "yes" else "no" end' "$man")
			srcs=$(jq -r '[(.install | map(.provenance) | unique | join("+")), .test.provenance] | map(if . == "" then "-" else . end) | join(" / ")' "$man")
			jq -r '(.baseline // [])[] | select(.status == "pass") | .id' "$man" | sort -u >"$OUT/logs/$key.cwm-pass"
			pass=$(wc -l <"$OUT/logs/$key.cwm-pass")
			mb=$(jq -r '(.layer_bytes / 1048576 * 10 | round) / 10' "$man")
			bs=$(jq -r '.build_seconds | round' "$man")
			reason=$(jq -r '.reason // ""' "$man" | tr '\n|' '  ' | cut -c1-200)
			plain="-" same="-"
			if [ "$ok" = yes ]; then
				cmd=$(plain_command "$man")
				echo "$cmd" >"$OUT/logs/$key.plain-cmd"
				[ $TABULATE = 1 ] || printf '%s\n' "$cmd" | timeout 10m nice "$CWM" env shell "$id" >"$OUT/logs/$key.plain" 2>&1
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
			line=$(row "$repo" "$ok" "$srcs" "$pass" "$plain" "$same" "$bs" "$mb" "$reason")
		fi
		echo "$line" >"$OUT/rows/$key"
	fi
	echo "$line"
	case $line in "| $repo | yes "*) usable=$((usable + 1)) ;; esac
	[ "$(echo "$line" | awk -F' \\| ' '{print $2 $6}')" = "yesyes" ] && equal=$((equal + 1))
done <"$list"
echo
echo "$n repositories: $usable usable, $equal usable with the same passing set as the plain run."
