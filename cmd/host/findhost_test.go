package main

import "testing"

func TestRunConfig(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		file  string
		isRun bool
	}{
		{[]string{"host", "run"}, "config.hcl", true},
		{[]string{"host", "run", "-c", "a.hcl"}, "a.hcl", true},
		{[]string{"host", "-c", "a.hcl", "run"}, "a.hcl", true},
		{[]string{"host", "--config=a.hcl", "run"}, "a.hcl", true},
		{[]string{"host", "run", "--config", "a.hcl"}, "a.hcl", true},
		{[]string{"host", "run", "-ca.hcl"}, "a.hcl", true},
		{[]string{"host", "run", "-c=a.hcl"}, "a.hcl", true},
		{[]string{"host", "--socket", "run", "status"}, "config.hcl", false},
		{[]string{"host", "mcp", "-c", "a.hcl"}, "a.hcl", false},
		{[]string{"host", "status", "-c", "a.hcl"}, "a.hcl", false},
		{[]string{"host"}, "config.hcl", false},
	} {
		file, isRun := runConfig(tc.args)
		if isRun != tc.isRun || (isRun && file != tc.file) {
			t.Errorf("runConfig(%q) = %q, %v; want %q, %v", tc.args, file, isRun, tc.file, tc.isRun)
		}
	}
}
