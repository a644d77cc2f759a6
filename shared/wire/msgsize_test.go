package wire

import (
	"errors"
	"strings"
	"testing"

	"github.com/plugkit-go/plugkit/shared/pb"
)

func TestMaxMessageBytesFromEnv(t *testing.T) {
	for _, tc := range []struct {
		name, env string
		want      int
		err       string
	}{
		{name: "unset means the default", env: "", want: DefaultMaxMessageBytes},
		{name: "configured", env: "16777216", want: 16 << 20},
		{name: "not a number", env: "16MiB", err: `PLUGKIT_MAX_MESSAGE_BYTES="16MiB": not a number of bytes`},
		{name: "zero", env: "0", err: "outside 1..2147483647 bytes"},
		{name: "too large for gRPC", env: "4294967296", err: "outside 1..2147483647 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(EnvMaxMessageBytes, tc.env)
			got, err := MaxMessageBytesFromEnv()
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("got %d, %v; want %d", got, err, tc.want)
			}
		})
	}
	if got := MaxMessageEnv(1234); got != "PLUGKIT_MAX_MESSAGE_BYTES=1234" {
		t.Errorf("MaxMessageEnv = %q", got)
	}
}

func TestCheckSize(t *testing.T) {
	small := &pb.ExecuteToolResponse{ValueJson: []byte(`"ok"`)}
	if err := CheckSize("result", small, 64); err != nil {
		t.Errorf("small message: %v", err)
	}
	big := &pb.ExecuteToolResponse{ValueJson: make([]byte, 100)}
	err := CheckSize(`result of tool "x"`, big, 64)
	var tooLarge *TooLargeError
	if !errors.As(err, &tooLarge) || tooLarge.Size != 102 || tooLarge.Max != 64 {
		t.Fatalf("err = %#v", err)
	}
	if want := `result of tool "x" is 102 bytes, over the 64-byte message limit`; err.Error() != want {
		t.Errorf("message = %q, want %q", err, want)
	}
}
