package lazyre

import "testing"

func TestNewCompilesOnceOnFirstUse(t *testing.T) {
	re := New(`^a+(b)$`)
	first := re()
	if first != re() {
		t.Fatal("a second call compiled the expression again")
	}
	if m := first.FindStringSubmatch("aab"); len(m) != 2 || m[1] != "b" {
		t.Fatalf("FindStringSubmatch(aab) = %q", m)
	}
}

func TestListKeepsOrder(t *testing.T) {
	res := List(`x`, `y+`)()
	if len(res) != 2 || res[0].String() != "x" || res[1].String() != "y+" {
		t.Fatalf("List = %v", res)
	}
}

func TestInvalidPanicsOnFirstUseAndInCompileAll(t *testing.T) {
	bad := New(`(`) // must not panic here
	defer func() {
		if recover() == nil {
			t.Fatal("an invalid expression compiled")
		}
	}()
	_ = bad
	CompileAll()
}
