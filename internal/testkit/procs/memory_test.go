package procs

import (
	"os"
	"runtime"
	"testing"
)

func TestReadMemory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	m, err := ReadMemory(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if m.RSS == 0 || m.PSS == 0 || m.PSS > m.RSS || m.Anonymous == 0 || m.Anonymous > m.RSS {
		t.Errorf("implausible memory of this process: %+v", m)
	}
	if m.PSSAnon+m.PSSFile > m.PSS {
		t.Errorf("Pss_Anon + Pss_File above Pss: %+v", m)
	}
	if _, err := ReadMemory(-1); err == nil {
		t.Error("no error for a process that cannot exist")
	}
}
