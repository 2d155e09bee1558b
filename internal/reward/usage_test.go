package reward

import (
	"testing"

	"cwm/internal/errkind"
)

// A wrong mapping comes from flags or options: its error is a usage error
// (exit 2 with the command's help, HTTP 400), said by Validate itself.
func TestValidateUsage(t *testing.T) {
	for _, m := range []Mapping{{Kind: "sparse"}, {Kind: "cwm", Threshold: 2}, {Kind: "binary", Scale: -1}} {
		if err := m.Validate(); errkind.Of(err) != errkind.Usage {
			t.Errorf("Mapping%+v.Validate() = %v (kind %v), want a usage error", m, err, errkind.Of(err))
		}
	}
	if err := (&Mapping{Kind: "cwm"}).Validate(); err != nil {
		t.Errorf("Mapping{cwm}.Validate() = %v", err)
	}
}
