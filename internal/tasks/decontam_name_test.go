package tasks

import (
	"errors"
	"strings"
	"testing"
)

// TestCheckName decides by name alone, as cwm export does for the
// repositories its records name: owner/name, URL and base name match a
// listed repository; other names and a nil list do not.
func TestCheckName(t *testing.T) {
	cases := []struct {
		repo, how string
	}{
		{"django/django", "it is django/django"},
		{"https://github.com/psf/requests.git", "it is psf/requests"},
		{"someone/flask", "its name flask is a listed repository's"},
		{"flask", "its name flask is a listed repository's"},
		{"acme/web", ""},
		{"textkit", ""},
	}
	for _, c := range cases {
		err := DefaultExclusions().CheckName(c.repo)
		var ex *ExcludedError
		switch {
		case c.how == "" && err != nil:
			t.Errorf("CheckName(%q) = %v, want nil", c.repo, err)
		case c.how != "" && (!errors.As(err, &ex) || !strings.Contains(ex.How, c.how)):
			t.Errorf("CheckName(%q) = %v, want excluded because %q", c.repo, err, c.how)
		}
	}
	var none *Exclusions
	if err := none.CheckName("django/django"); err != nil {
		t.Errorf("nil list: CheckName = %v, want nil", err)
	}
}
