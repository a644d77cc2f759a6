package pipeline

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/plugkit-go/plugkit/shared/wire"
)

// The parts of stage 0, measured one by one: they are most of what a call
// through the pipeline costs beyond the tool's body.

func benchTool(b *testing.B) *registered {
	reg, err := compile(Tool{
		ToolDescriptor: wire.ToolDescriptor{
			Name: "add", Description: "Adds.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`),
		},
		Execute: func(context.Context, *Execution) (any, error) { return nil, nil },
	}, "P", DefaultMaxDescriptionBytes)
	if err != nil {
		b.Fatal(err)
	}
	return reg
}

func BenchmarkStage0(b *testing.B) {
	raw := []byte(`{"a":2,"b":3}`)
	reg := benchTool(b)
	b.Run("parse", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := parseJSON(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The duplicate-key check is a map lookup per key, in the map the
	// parser fills anyway: measured on an object of many keys.
	wide := []byte(`{"k00":0,"k01":1,"k02":2,"k03":3,"k04":4,"k05":5,"k06":6,"k07":7,"k08":8,"k09":9,` +
		`"k10":0,"k11":1,"k12":2,"k13":3,"k14":4,"k15":5,"k16":6,"k17":7,"k18":8,"k19":9,` +
		`"o":{"a":1,"b":2,"c":[{"x":1,"y":2},{"x":3,"y":4}]}}`)
	b.Run("parse-wide", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := parseJSON(wide); err != nil {
				b.Fatal(err)
			}
		}
	})
	v, _ := parseJSON(raw)
	b.Run("validate", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := reg.schema.Validate(v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if !reg.fast.accepts(v) {
				b.Fatal("the fast path refuses")
			}
		}
	})
	b.Run("canonical", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = appendCanonical(make([]byte, 0, len(raw)), v)
		}
	})
	b.Run("all", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, bad := checkArguments(reg, raw); bad != nil {
				b.Fatal(bad)
			}
		}
	})
}
