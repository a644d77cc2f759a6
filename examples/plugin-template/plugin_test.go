package main

import (
	"testing"

	"github.com/plugkit-go/plugkit/shared/sdk/sdktest"
)

// TestWordCount runs the plugin in the test's process against a fake host
// and calls its tool through its listener, as the host would.
func TestWordCount(t *testing.T) {
	p := sdktest.Start(t, Plugin, sdktest.Options{Config: `{"forbidden":["secret"]}`})

	res, err := p.Call(t.Context(), "word_count", `{"text":"one two three"}`)
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK || string(res.Value) != "3" {
		t.Errorf("word_count = %+v, want 3", res)
	}

	res, err = p.Call(t.Context(), "word_count", `{"text":"a Secret plan"}`)
	if err != nil {
		t.Fatal(err)
	}
	if res.OK || res.Error.Code != "DENIED" || res.Error.Message != "the text holds the forbidden word secret" {
		t.Errorf("word_count of a forbidden word = %+v, want DENIED", res)
	}
}

// TestConformance runs the protocol cases that apply to any one plugin.
func TestConformance(t *testing.T) {
	sdktest.Conformance(t, Plugin, sdktest.Options{Config: `{"forbidden":["secret"]}`})
}
