package sim

import (
	"regexp"
	"testing"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		command, want string
	}{
		{"ls -la", Real},
		{"cat setup.py | head -20", Real},
		{`grep -rn "a|b; python" src/`, Real},
		{"sed -n '10,20p' pkg/mod.py", Real},
		{"sed -i 's/a/b/' pkg/mod.py", Real},
		{"find . -name '*.py' | xargs grep -l foo | wc -l", Real},
		{"git diff", Real},
		{"git status && git diff HEAD", Real},
		{"cd /repo && ls", Real},
		{"head -5 a.py; tail -5 a.py", Real},
		{"cat > t.py <<'EOF'\nimport os\nprint(os.getcwd())\nEOF", Real},
		{"cat > t.py <<EOF\nimport os\nEOF\npython t.py", KindPython},
		{"echo hi > out.txt", Real},
		{"ls /repo/x 2>&1 | grep -c 'No such'", Real},
		{"cat a.txt &> /dev/null; wc -l a.txt >&2", Real},
		{"sleep 1 & wait", KindRun},
		{"for f in *.py; do wc -l $f; done", Real},
		{"# just a comment", Real},
		{"python -c 'print(1)'", KindPython},
		{"python3 reproduce.py", KindPython},
		{"/usr/bin/python3.11 -m pytest tests/test_a.py -x", KindTest},
		{"python -m pytest -q", KindTest},
		{"pytest tests/test_x.py::test_y -q 2>&1 | tail -20", KindTest},
		{"cd /repo && PYTHONPATH=src timeout 60 pytest -x", KindTest},
		{"tox -e py311", KindTest},
		{"python -m pip install -e .", KindBuild},
		{"make -j2", KindBuild},
		{"gcc -o a a.c && ./a", KindBuild},
		{"./run_tests.sh", KindRun},
		{"bash script.sh", KindRun},
		{"node index.js", KindRun},
		{"echo $(python -c 'print(2)')", KindPython},
		{"ls | xargs -n1 python", KindPython},
		{"git log --oneline | head; python x.py; pytest", KindTest},
	}
	for _, tt := range tests {
		if got := Classify(tt.command); got != tt.want {
			t.Errorf("Classify(%q) = %q, want %q", tt.command, got, tt.want)
		}
	}
}

func TestClassifierOverrides(t *testing.T) {
	c := &Classifier{TestCommand: "bash run_suite.sh", SimRe: regexp.MustCompile(`^cat big\.log`), RealRe: regexp.MustCompile(`python setup\.py --version`)}
	tests := []struct {
		command, want string
	}{
		{"bash run_suite.sh -k foo", KindTest},
		{"cat big.log", KindRun},
		{"cat small.log", Real},
		{"python setup.py --version", Real},
		{"python setup.py build", KindPython},
	}
	for _, tt := range tests {
		if got := c.Classify(tt.command); got != tt.want {
			t.Errorf("Classify(%q) = %q, want %q", tt.command, got, tt.want)
		}
	}
}
