package rbm

import (
	"encoding/json"
	"testing"
)

// Units and Middle travel through JSON by name, and a wrong name fails.
func TestUnitsMiddleJSON(t *testing.T) {
	t.Parallel()
	type kinds struct {
		Units  Units
		Middle Middle
	}
	in := kinds{Gaussian, Samples}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `{"Units":"gaussian","Middle":"samples"}`; got != want {
		t.Errorf("json.Marshal(%+v) = %s; want %s", in, got, want)
	}
	var back kinds
	if err := json.Unmarshal(b, &back); err != nil || back != in {
		t.Errorf("json.Unmarshal(%s) = %+v, %v; want %+v", b, back, err, in)
	}
	for _, bad := range []string{`{"Units":"binary"}`, `{"Middle":"guesses"}`} {
		if err := json.Unmarshal([]byte(bad), &back); err == nil {
			t.Errorf("json.Unmarshal(%s): no error", bad)
		}
	}
}
