// Command testhook is a policy check the way agents that shell out run
// one: a process started per check, the call as JSON on stdin, the
// decision as JSON on stdout. remote's BenchmarkGoHookPerCheck starts it
// per check, to compare with a check by a plugin process that stays up.
package main

import (
	"encoding/json"
	"os"
)

func main() {
	var call struct {
		Tool      string             `json:"tool"`
		Arguments map[string]float64 `json:"arguments"`
	}
	if err := json.NewDecoder(os.Stdin).Decode(&call); err != nil {
		os.Exit(2)
	}
	deny := ""
	if call.Arguments["a"] > 100 {
		deny = "a is over 100"
	}
	_ = json.NewEncoder(os.Stdout).Encode(map[string]string{"deny": deny})
}
