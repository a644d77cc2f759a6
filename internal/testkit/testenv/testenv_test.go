package testenv

import (
	"os/exec"
	"testing"
)

func TestLookPathFindsGo(t *testing.T) {
	want, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	if got := LookPath(t, "go"); got != want {
		t.Fatalf("LookPath(go) = %q, want %q", got, want)
	}
}
